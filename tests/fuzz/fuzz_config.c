/* libFuzzer target for the config loader: any bytes, as runner.json and as a profile, must give
 * either a loaded config or an error message with a position, never a crash or a leak. */
#include "policy/config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rd_error err = {0};
	struct rd_config cfg;
	if (rd_config_parse("/fuzz/runner.json", (const char *)data, size, &cfg, &err) == 0)
		rd_config_free(&cfg);
	else if (err.n == 0 || strncmp(err.msg, "/fuzz/runner.json", 17) != 0)
		abort(); /* a failure must always say what and where */

	rd_error_clear(&err);
	struct rd_profile prof;
	if (rd_profile_parse("/fuzz/p.json", "p", (const char *)data, size, &prof, &err) == 0)
		rd_profile_free(&prof);
	else if (err.n == 0 || strncmp(err.msg, "/fuzz/p.json", 12) != 0)
		abort();
	return 0;
}
