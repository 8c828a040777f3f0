/*
 * sb_hex: the value of one hexadecimal digit, for the parsers that read hex
 * (percent escapes, chunk sizes, keys from configuration, multipart).
 */
#ifndef SB_HEX_H
#define SB_HEX_H

/* 0..15 for '0'-'9', 'a'-'f', 'A'-'F'; -1 for anything else. */
static inline int sb_hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif
