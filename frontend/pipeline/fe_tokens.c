/* fe_tokens: the pre-tokenizer piece count (see fe_tokens.h). */
#include "fe_tokens.h"

#include <stdlib.h>
#include <string.h>

enum { FE_TOK_SPACE, FE_TOK_LETTER, FE_TOK_DIGIT, FE_TOK_SYMBOL };

#define FE_TOKENS_PER_MESSAGE 3
#define FE_TOKENS_REPLY 3
#define FE_TOKENS_PER_IMAGE 85

static int fe_tokens_class(unsigned char b)
{
    if (b >= 0x80 || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z'))
        return FE_TOK_LETTER;
    if (b >= '0' && b <= '9')
        return FE_TOK_DIGIT;
    if (b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f' || b == '\v')
        return FE_TOK_SPACE;
    return FE_TOK_SYMBOL;
}

void fe_tokens_counter_init(fe_tokens_counter_t *c)
{
    memset(c, 0, sizeof *c);
}

/* A symbol run ends before `next`: it is a piece of its own unless it is one
 * symbol that the following word takes in. */
static void fe_tokens_end_symbols(fe_tokens_counter_t *c, int next)
{
    if (c->cls == FE_TOK_SYMBOL && !(c->run == 1 && next == FE_TOK_LETTER))
        c->count++;
}

void fe_tokens_feed(fe_tokens_counter_t *c, const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        int cls = fe_tokens_class((unsigned char)text[i]);
        if (cls == c->cls) {
            if (cls == FE_TOK_DIGIT && c->run == 3) { /* digits go in groups of three */
                c->count++;
                c->run = 0;
            }
            c->run++;
            continue;
        }
        fe_tokens_end_symbols(c, cls);
        if (c->cls == FE_TOK_DIGIT)
            c->count++;
        if (cls == FE_TOK_LETTER)
            c->count++;
        c->cls = cls;
        c->run = 1;
    }
}

int64_t fe_tokens_total(const fe_tokens_counter_t *c)
{
    return c->count + ((c->cls == FE_TOK_DIGIT || c->cls == FE_TOK_SYMBOL) ? 1 : 0);
}

int64_t fe_tokens_text(const char *text)
{
    fe_tokens_counter_t c;
    fe_tokens_counter_init(&c);
    if (text)
        fe_tokens_feed(&c, text, strlen(text));
    return fe_tokens_total(&c);
}

/* Texts are counted separately: two strings never form one piece. */
static int64_t fe_tokens_field(const json_t *obj, const char *key)
{
    return fe_tokens_text(json_string_value(json_object_get(obj, key)));
}

static int64_t fe_tokens_part(const json_t *part)
{
    if (json_is_string(part))
        return fe_tokens_text(json_string_value(part));
    const char *type = json_string_value(json_object_get(part, "type"));
    if (type && !strcmp(type, "input_image"))
        return FE_TOKENS_PER_IMAGE;
    return fe_tokens_field(part, "text") + fe_tokens_field(part, "refusal");
}

static int64_t fe_tokens_content(const json_t *content)
{
    if (json_is_string(content))
        return fe_tokens_text(json_string_value(content));
    int64_t n = 0;
    size_t i;
    const json_t *part;
    json_array_foreach (content, i, part)
        n += fe_tokens_part(part);
    return n;
}

static int64_t fe_tokens_item(const json_t *item)
{
    const char *type = json_string_value(json_object_get(item, "type"));
    if (!type || !strcmp(type, "message"))
        return FE_TOKENS_PER_MESSAGE + fe_tokens_content(json_object_get(item, "content"));
    if (!strcmp(type, "function_call"))
        return FE_TOKENS_PER_MESSAGE + fe_tokens_field(item, "name") + fe_tokens_field(item, "arguments");
    if (!strcmp(type, "function_call_output"))
        return FE_TOKENS_PER_MESSAGE + fe_tokens_content(json_object_get(item, "output"));
    return 0; /* reasoning and other items: not counted (a lower bound) */
}

static int64_t fe_tokens_tools(const json_t *tools)
{
    int64_t n = 0;
    size_t i;
    const json_t *tool;
    json_array_foreach (tools, i, tool) {
        n += fe_tokens_field(tool, "name") + fe_tokens_field(tool, "description");
        const json_t *params = json_object_get(tool, "parameters");
        char *schema = params ? json_dumps(params, JSON_COMPACT) : NULL;
        n += fe_tokens_text(schema);
        free(schema);
    }
    return n;
}

int64_t fe_tokens_request(const json_t *request, const json_t *input)
{
    int64_t n = FE_TOKENS_REPLY;
    const json_t *instructions = json_object_get(request, "instructions");
    if (json_is_string(instructions))
        n += FE_TOKENS_PER_MESSAGE + fe_tokens_text(json_string_value(instructions));
    if (json_is_string(input))
        return n + FE_TOKENS_PER_MESSAGE + fe_tokens_text(json_string_value(input)) +
               fe_tokens_tools(json_object_get(request, "tools"));
    size_t i;
    const json_t *item;
    json_array_foreach (input, i, item)
        n += fe_tokens_item(item);
    return n + fe_tokens_tools(json_object_get(request, "tools"));
}
