/* Unit tests for sb_map: put/get/remove under growth and deletion shifts. */
#include <stdint.h>
#include <stdio.h>

#include "sb_map.h"
#include "sb_test.h"

static int drop_odd(const char *key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    return ((intptr_t)value) % 2;
}

int main(void)
{
    sb_map_t *m = sb_map_new();
    char k[32];
    for (intptr_t i = 1; i <= 5000; i++) {
        snprintf(k, sizeof k, "key-%ld", (long)i);
        CHECK(sb_map_put(m, k, (void *)i) == NULL);
    }
    CHECK_INT(sb_map_size(m), 5000);
    CHECK(sb_map_put(m, "key-7", (void *)7) == (void *)7); /* replace returns previous */
    for (intptr_t i = 1; i <= 5000; i += 3) {
        snprintf(k, sizeof k, "key-%ld", (long)i);
        CHECK(sb_map_remove(m, k) == (void *)i);
    }
    int ok = 1;
    for (intptr_t i = 1; i <= 5000; i++) {
        snprintf(k, sizeof k, "key-%ld", (long)i);
        void *v = sb_map_get(m, k);
        if ((i - 1) % 3 == 0 ? v != NULL : v != (void *)i)
            ok = 0;
    }
    CHECK(ok);
    sb_map_remove_if(m, drop_odd, NULL);
    ok = 1;
    for (intptr_t i = 1; i <= 5000; i++) {
        snprintf(k, sizeof k, "key-%ld", (long)i);
        void *v = sb_map_get(m, k);
        int expect = (i - 1) % 3 != 0 && i % 2 == 0;
        if (expect ? v != (void *)i : v != NULL)
            ok = 0;
    }
    CHECK(ok);
    CHECK(sb_map_get(m, "absent") == NULL);
    CHECK(sb_map_remove(m, "absent") == NULL);
    sb_map_destroy(&m);
    CHECK(m == NULL);
    return sb_test_finish("map");
}
