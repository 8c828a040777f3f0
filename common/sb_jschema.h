/*
 * sb_jschema: JSON Schema validation for the subset OpenAI structured outputs
 * accept in strict mode. The gateway uses it to check model output against a
 * response_format / tool schema and to check request schemas up front.
 *
 * Keywords (JSON Schema 2020-12 semantics; draft-7 "definitions" accepted):
 *   type, properties, required, additionalProperties, enum, const, anyOf,
 *   items (schema form only), $ref (local: "#", "#/json/pointer", with ~0 ~1
 *   and %-decoding), $defs, definitions, minLength, maxLength (code points),
 *   pattern (ECMA-262, unanchored search), minimum, maximum, exclusiveMinimum,
 *   exclusiveMaximum (numeric form), minItems, maxItems; boolean schemas.
 * Other keywords are ignored, as JSON Schema requires for unknown keywords;
 * sb_jschema_check_strict() is where they are rejected. Siblings of $ref apply
 * (2020-12), unlike draft 7 where they were ignored.
 *
 * Patterns are compiled with sb_regex (sb_regex.h): ECMA syntax is
 * translated to a POSIX ERE over UTF-8 bytes and run with regexec() under a
 * private "C" locale, so matching is per code point (as the ECMA "u" flag)
 * whatever the process locale is. sb_jschema_new() fails on the patterns
 * sb_regex rejects: what POSIX cannot express (lookaround, \p{...},
 * \u{...}, backreferences), what glibc gets wrong or is pathologically slow
 * on (^ $ \b \B inside a group repeated more than once; repeating a
 * sub-pattern that can match empty, as "(a|b?)+"), and patterns whose counted
 * repetitions expand too far (e.g. "^.{0,2000}$": use maxLength; unanchored
 * ones have a lower limit). Within those limits a pattern compiles and
 * matches a 100 KB string in well under 100 ms.
 */
#ifndef SB_JSCHEMA_H
#define SB_JSCHEMA_H

#include <jansson.h>
#include <stddef.h>

/* Maximum nesting of subschema applications during validation (each
 * properties/items/additionalProperties/anyOf/$ref step counts one), and of
 * subschemas in a schema. Deeper input fails with -ELOOP rather than
 * exhausting the stack. */
#define SB_JSCHEMA_MAX_DEPTH 128
/* Maximum subschema applications in one sb_jschema_validate() call; bounds
 * the work of anyOf backtracking on hostile input (fails with -E2BIG). */
#define SB_JSCHEMA_MAX_STEPS (1L << 22)

typedef struct sb_jschema sb_jschema_t;

/* Compiles schema. schema is borrowed: the compiled object keeps its own deep
 * copy, so the caller may change or free schema afterwards. Returns NULL and
 * a one-line message in err (if err is not NULL) when the schema cannot be
 * used: a keyword of the wrong type, a bad or unsupported regex, a $ref that
 * is not local or has no target, a $ref cycle that consumes no input, or
 * nesting deeper than SB_JSCHEMA_MAX_DEPTH. */
sb_jschema_t *sb_jschema_new(const json_t *schema, char *err, size_t errsz) __attribute__((warn_unused_result));

/* NULL-safe; sets *s to NULL. */
void sb_jschema_destroy(sb_jschema_t **s);

/* Validates instance (borrowed) against s. Returns 0 if valid; -1 if invalid,
 * with a one-line reason naming the JSON path in err, e.g.
 * "$.items[2].name: expected string, got integer"; -ELOOP or -E2BIG if the
 * depth or step limit was hit (err says which). err may be NULL. Allocates
 * nothing; s is not modified, but the regexes inside are not thread-safe
 * (one loop per process). */
int sb_jschema_validate(const sb_jschema_t *s, const json_t *instance, char *err, size_t errsz)
    __attribute__((warn_unused_result));

/* Checks OpenAI's strict-mode rules on schema (borrowed): the root is a
 * schema of type "object"; every object schema has additionalProperties:
 * false and lists each of its properties in required; only the keywords above
 * plus the annotations title, description, $comment and $schema are used;
 * and the schema compiles with sb_jschema_new(). Returns 0, or -EINVAL with a
 * message in OpenAI's style in err, e.g. "Invalid schema: In
 * context=('properties', 'name'), 'additionalProperties' is required to be
 * supplied and to be false." */
int sb_jschema_check_strict(const json_t *schema, char *err, size_t errsz) __attribute__((warn_unused_result));

/* The one change OpenAI makes when it turns a function's schema strict by
 * itself (a Responses function tool with "strict" omitted): a deep copy of
 * schema (borrowed) in which every object schema without an
 * "additionalProperties" gets "additionalProperties": false. Object schemas
 * are those sb_jschema_check_strict() treats as such (type includes "object",
 * or "properties" present), found where it looks: the root, properties,
 * items, anyOf, $defs and definitions, to SB_JSCHEMA_MAX_DEPTH. Nothing else
 * is touched (no "required" is added), so the caller runs
 * sb_jschema_check_strict() on the result to know whether it conforms. A
 * schema that is not an object comes back copied unchanged. New reference,
 * or NULL if schema is NULL or cannot be copied. */
json_t *sb_jschema_close_objects(const json_t *schema) __attribute__((warn_unused_result));

#endif
