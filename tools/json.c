/* ftlctl: a small JSON writer.  See json.h. */

#include <config.h>

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <glib.h>

#include "json.h"

void
json_init (struct json *j)
{
  j->out = g_string_new (NULL);
  j->depth = 0;
  j->first[0] = true;
}

char *
json_finish (struct json *j)
{
  assert (j->depth == 0);
  g_string_append_c (j->out, '\n');
  return g_string_free (j->out, FALSE);
}

/* Two spaces per level of nesting. */
static void
indent (struct json *j)
{
  for (unsigned i = 0; i < j->depth; i++)
    g_string_append (j->out, "  ");
}

/* A JSON string: quoted, with quotes, backslashes and control
 * characters escaped.  Other bytes pass through: file names are bytes,
 * and UTF-8 passes unchanged.
 */
static void
append_string (struct json *j, const char *s)
{
  g_string_append_c (j->out, '"');
  for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
    switch (*p) {
    case '"':  g_string_append (j->out, "\\\""); break;
    case '\\': g_string_append (j->out, "\\\\"); break;
    case '\n': g_string_append (j->out, "\\n"); break;
    case '\t': g_string_append (j->out, "\\t"); break;
    default:
      if (*p < 0x20)
        g_string_append_printf (j->out, "\\u%04x", *p);
      else
        g_string_append_c (j->out, *p);
    }
  }
  g_string_append_c (j->out, '"');
}

/* Start a member or element: the separator, the indentation and the
 * key.
 */
static void
member (struct json *j, const char *key)
{
  if (j->depth > 0) {
    g_string_append (j->out, j->first[j->depth] ? "\n" : ",\n");
    j->first[j->depth] = false;
    indent (j);
  }
  if (key) {
    append_string (j, key);
    g_string_append (j->out, ": ");
  }
}

static void
begin (struct json *j, const char *key, char open)
{
  member (j, key);
  g_string_append_c (j->out, open);
  assert (j->depth + 1 < JSON_MAX_DEPTH);
  j->depth++;
  j->first[j->depth] = true;
}

static void
end (struct json *j, char close)
{
  bool empty = j->first[j->depth];

  assert (j->depth > 0);
  j->depth--;
  if (!empty) {
    g_string_append_c (j->out, '\n');
    indent (j);
  }
  g_string_append_c (j->out, close);
}

void
json_begin_object (struct json *j, const char *key)
{
  begin (j, key, '{');
}

void
json_end_object (struct json *j)
{
  end (j, '}');
}

void
json_begin_array (struct json *j, const char *key)
{
  begin (j, key, '[');
}

void
json_end_array (struct json *j)
{
  end (j, ']');
}

void
json_uint (struct json *j, const char *key, uint64_t v)
{
  member (j, key);
  g_string_append_printf (j->out, "%" PRIu64, v);
}

void
json_double (struct json *j, const char *key, double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  member (j, key);
  if (!isfinite (v)) {          /* JSON has no NaN or infinity */
    g_string_append (j->out, "null");
    return;
  }
  /* Four decimals, as the statistics file has; '.' whatever the locale. */
  g_string_append (j->out, g_ascii_formatd (buf, sizeof buf, "%.4f", v));
}

void
json_bool (struct json *j, const char *key, bool v)
{
  member (j, key);
  g_string_append (j->out, v ? "true" : "false");
}

void
json_string (struct json *j, const char *key, const char *v)
{
  member (j, key);
  append_string (j, v);
}
