/* Loading runner.json and profiles: strict JSON (duplicates, unknown keys and wrong types are
 * errors), every error as "FILE:LINE:COL: message". Bad config never means "allow". */
#ifndef RD_CONFIG_H
#define RD_CONFIG_H

#include "lib/error.h"
#include "policy/policy.h"

#include <stddef.h>

#define RD_CONFIG_VERSION  1
#define RD_CONFIG_MAX_SIZE (1 << 20)

/* Parse runner.json from a buffer; file is the name used in messages and to resolve relative
 * paths (profiles_dir, audit.path). */
int rd_config_parse(const char *file, const char *text, size_t len, struct rd_config *out,
                    struct rd_error *err) _wur_;
int rd_config_load(const char *file, struct rd_config *out, struct rd_error *err) _wur_;

/* Parse a profile from a buffer. expect_name, if not NULL, is the name the file must carry
 * (its base name without ".json"). */
int rd_profile_parse(const char *file, const char *expect_name, const char *text, size_t len,
                     struct rd_profile *out, struct rd_error *err) _wur_;

/* Load a profile by name (profiles_dir/NAME.json) or, when the argument contains '/', from
 * that path. */
int rd_profile_load(const struct rd_config *cfg, const char *name_or_path, struct rd_profile *out,
                    struct rd_error *err) _wur_;

/* The names of the profiles in profiles_dir (files ending in .json), sorted. */
int rd_profile_list(const struct rd_config *cfg, struct rd_strv *out, struct rd_error *err) _wur_;

/* The runner.json to use when --config is not given: PREFIX/etc/runnerd/runner.json where
 * PREFIX is the parent of the directory holding the runnerd binary, then
 * /etc/runnerd/runner.json. Returns a malloc'd path, or NULL with err set. */
char *rd_config_default_path(struct rd_error *err);

#endif
