#ifndef RD_JSONPOS_H
#define RD_JSONPOS_H
#include <stdbool.h>
#include <stddef.h>
struct rd_jsonpos_entry {
	char *path; /* JSON Pointer: "" is the root, "/commands/rules/0/match" */
	int key_line,
	    key_col;   /* the member's key (the opening quote); 0,0 for root and array elements */
	int line, col; /* the first character of the value */
};
struct rd_jsonpos {
	struct rd_jsonpos_entry *v;
	size_t n;
};
/* Index every value of a JSON text. Returns 0, -ENOMEM, or -EINVAL if the text is not
 * well-formed JSON (it never reads past len; text need not be NUL-terminated). */
int rd_jsonpos_index(const char *text, size_t len, struct rd_jsonpos *out);
/* Position of the value at path, or of its key when at_key is true and the value is an object
 * member (falls back to the value's position otherwise). False if the path is unknown. */
bool rd_jsonpos_find(const struct rd_jsonpos *idx, const char *path, bool at_key, int *line,
                     int *col);
/* Append one reference token to a pointer in buf (escaping '~' as "~0" and '/' as "~1"):
 * path "/a" + key "b/c" -> "/a/b~1c". Returns 0 or -ENAMETOOLONG if it does not fit. */
int rd_jsonpos_append(char *buf, size_t size, const char *token);
/* Same for an array index. */
int rd_jsonpos_append_index(char *buf, size_t size, size_t index);
void rd_jsonpos_free(struct rd_jsonpos *idx);
#endif
