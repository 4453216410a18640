/* ftlctl: a small JSON writer over a GString.
 *
 * Members are written in the order of the calls, indented two spaces a
 * level, as the plugin's statistics file is.  A key is given for a
 * member of an object and is NULL for the top level and for elements
 * of an array.  Nesting is at most JSON_MAX_DEPTH levels.
 */

#ifndef FTLCTL_JSON_H
#define FTLCTL_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#define JSON_MAX_DEPTH 16

struct json {
  GString *out;
  unsigned depth;
  bool first[JSON_MAX_DEPTH];   /* no member yet at this level */
};

extern void json_init (struct json *j);
/* The text written, with a final newline; the caller frees it. */
extern char *json_finish (struct json *j);

extern void json_begin_object (struct json *j, const char *key);
extern void json_end_object (struct json *j);
extern void json_begin_array (struct json *j, const char *key);
extern void json_end_array (struct json *j);

extern void json_uint (struct json *j, const char *key, uint64_t v);
extern void json_double (struct json *j, const char *key, double v);
extern void json_bool (struct json *j, const char *key, bool v);
extern void json_string (struct json *j, const char *key, const char *v);

#endif /* FTLCTL_JSON_H */
