/* ftlctl: reading statistics files back.  See timeline.h. */

#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include "ftlctl.h"
#include "timeline.h"

/* Whether text nests objects and arrays at most FTL_STATS_MAX_DEPTH
 * deep (json-glib's parser has no limit of its own and recurses).
 */
static bool
shallow (const char *text, size_t len)
{
  unsigned depth = 0;
  bool in_string = false;

  for (size_t i = 0; i < len; i++) {
    char c = text[i];

    if (in_string) {
      if (c == '\\')
        i++;
      else if (c == '"')
        in_string = false;
    }
    else if (c == '"')
      in_string = true;
    else if ((c == '{' || c == '[') && ++depth > FTL_STATS_MAX_DEPTH)
      return false;
    else if ((c == '}' || c == ']') && depth > 0)
      depth--;
  }
  return true;
}

/* json-glib's tree into set, in document order (metrics.h). */
static void
flatten (JsonNode *node, const char *key, struct ftl_stat_set *set)
{
  if (set->error)
    return;
  switch (json_node_get_node_type (node)) {
  case JSON_NODE_OBJECT: {
    JsonObjectIter it;
    const char *name;
    JsonNode *member;

    ftl_stats_begin_object (set, key, NULL);
    json_object_iter_init_ordered (&it, json_node_get_object (node));
    while (json_object_iter_next_ordered (&it, &name, &member))
      flatten (member, name, set);
    ftl_stats_end (set);
    break;
  }
  case JSON_NODE_ARRAY: {
    JsonArray *a = json_node_get_array (node);

    ftl_stats_begin_array (set, key);
    for (guint i = 0; i < json_array_get_length (a); i++)
      flatten (json_array_get_element (a, i), NULL, set);
    ftl_stats_end (set);
    break;
  }
  case JSON_NODE_VALUE:
    switch (json_node_get_value_type (node)) {
    case G_TYPE_INT64:
      ftl_stats_add_int (set, key, json_node_get_int (node), NULL);
      break;
    case G_TYPE_DOUBLE:
      ftl_stats_add_real (set, key, json_node_get_double (node));
      break;
    case G_TYPE_BOOLEAN:
      ftl_stats_add_bool (set, key, json_node_get_boolean (node), NULL);
      break;
    case G_TYPE_STRING:
      ftl_stats_add_string (set, key, json_node_get_string (node));
      break;
    default:
      ftl_stats_add_null (set, key);
    }
    break;
  case JSON_NODE_NULL:
    ftl_stats_add_null (set, key);
    break;
  }
}

/* Parse len bytes of JSON text into set (empty); if object, it must be
 * an object with members.  Returns 0, or -1 with why in *why (g_free
 * it).
 */
static int
read_json (const char *text, size_t len, bool object,
           struct ftl_stat_set *set, char **why)
{
  JsonParser *parser;
  GError *gerr = NULL;
  JsonNode *root;
  int r;

  if (!shallow (text, len)) {
    *why = g_strdup ("nested too deeply");
    return -1;
  }
  parser = json_parser_new ();
  if (!json_parser_load_from_data (parser, text, len, &gerr)) {
    *why = g_strdup (gerr->message);
    g_error_free (gerr);
  }
  else if ((root = json_parser_get_root (parser)) == NULL)
    *why = g_strdup ("empty");
  else if (object && !JSON_NODE_HOLDS_OBJECT (root))
    *why = g_strdup ("not an object");
  else if (object && json_object_get_size (json_node_get_object (root)) == 0)
    *why = g_strdup ("empty object");
  else {
    flatten (root, NULL, set);
    if ((r = ftl_stats_error (set)) == 0) {
      g_object_unref (parser);
      return 0;
    }
    *why = g_strdup (strerror (-r));
    ftl_stats_free (set);
  }
  g_object_unref (parser);
  return -1;
}

long
timeline_read (const char *path, timeline_fn fn, void *opaque)
{
  FILE *fp = fopen (path, "r");
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  unsigned long lineno = 0;
  long count = 0;

  if (fp == NULL) {
    ftlctl_error ("%s: %s", path, strerror (errno));
    return -1;
  }
  while ((n = getline (&line, &cap, fp)) != -1) {
    struct ftl_stat_set set = { 0 };
    bool complete = n > 0 && line[n - 1] == '\n';
    char *why = NULL;
    bool more;

    lineno++;
    if (strspn (line, " \t\r\n") == (size_t) n)
      continue;
    if (read_json (line, n, true, &set, &why) == -1) {
      if (!complete) {          /* being appended */
        g_free (why);
        break;
      }
      ftlctl_error ("%s:%lu: not a timeline line (one JSON object): %s",
                    path, lineno, why);
      g_free (why);
      free (line);
      fclose (fp);
      return -1;
    }
    count++;
    more = fn (opaque, &set, lineno);
    ftl_stats_free (&set);
    if (!more)
      break;
  }
  free (line);
  fclose (fp);
  return count;
}

int
stats_file_read (const char *path, struct ftl_stat_set *set,
                 struct ftl_stat_set *prev, bool *timeline)
{
  char *text = NULL, *why = NULL;
  gsize len;
  GError *gerr = NULL;
  char *last, *before;

  memset (set, 0, sizeof *set);
  memset (prev, 0, sizeof *prev);
  if (!g_file_get_contents (path, &text, &len, &gerr)) {
    ftlctl_error ("%s", gerr->message);
    g_error_free (gerr);
    return -1;
  }
  /* A timeline's lines each begin with {"time": */
  *timeline = strncmp (text, "{\"time\":", 8) == 0;
  if (!*timeline) {
    if (read_json (text, len, false, set, &why) == -1) {
      ftlctl_error ("%s: not a statistics file: %s", path, why);
      g_free (why);
      g_free (text);
      return -1;
    }
    g_free (text);
    return 0;
  }
  /* The last two complete lines. */
  while (len > 0 && text[len - 1] != '\n')
    len--;                      /* a line being appended */
  text[len] = '\0';
  if (len > 0)
    text[--len] = '\0';
  last = strrchr (text, '\n');
  if (last) {
    *last++ = '\0';
    before = strrchr (text, '\n');
    before = before ? before + 1 : text;
    if (read_json (before, strlen (before), true, prev, &why) == -1) {
      g_free (why);
      why = NULL;
    }
  }
  else
    last = text;
  if (read_json (last, strlen (last), true, set, &why) == -1) {
    ftlctl_error ("%s: the last line is not a timeline line: %s", path, why);
    g_free (why);
    ftl_stats_free (prev);
    g_free (text);
    return -1;
  }
  g_free (text);
  return 0;
}
