/* What a command must not see: the masked paths for a caller, and the check that those which
 * existed when the session started are still where they were. */
#ifndef RD_SUP_MASKS_H
#define RD_SUP_MASKS_H

#include "supervisor/core.h"

/* The caller's home from the password database (its HOME variable is the caller's to set, and
 * a mask must not move where the caller points it); NULL if the uid has no entry. Kept for the
 * last uid asked. */
const char *sup_masks_home(struct sup *u, uid_t uid);

/* Every mask of a command matched by rule (NULL: none), for a caller whose home is home: the
 * config's and profile's (rd_mask_list), and the control socket directories. 0 or -ENOMEM. */
int sup_masks_for(struct sup *u, const struct rd_rule *rule, const char *home, struct rd_strv *out);

/* Record the masked paths as they are now (runnerd's own user's home): called once, at start. */
void sup_masks_pin(struct sup *u);

/* The first pinned path of masks that is no longer what it was, or NULL. */
const char *sup_masks_tampered(struct sup *u, const struct rd_strv *masks);

void sup_masks_free(struct sup *u);

#endif
