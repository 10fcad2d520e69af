// SPDX-License-Identifier: MIT
/*
 * The exporters linked into atftrace. Each formats/<name>.c defines one `<name>_ops`; they are
 * declared weak here so the table builds while exporters are added one by one.
 */
#include <stddef.h>
#include <string.h>
#include "format.h"

extern const struct export_ops dial9_ops __attribute__((weak));
extern const struct export_ops perfetto_ops __attribute__((weak));
extern const struct export_ops chrome_ops __attribute__((weak));
extern const struct export_ops wtf_ops __attribute__((weak));
extern const struct export_ops wtf_json_ops __attribute__((weak));
extern const struct export_ops rtc_ops __attribute__((weak));
extern const struct export_ops zts_ops __attribute__((weak));
extern const struct export_ops speedscope_ops __attribute__((weak));
extern const struct export_ops folded_ops __attribute__((weak));

static const struct export_ops *const all_formats[] = {
	&dial9_ops, &perfetto_ops, &chrome_ops, &wtf_ops, &wtf_json_ops, &rtc_ops, &zts_ops,
	&speedscope_ops, &folded_ops,
};

#define NFORMATS (sizeof(all_formats) / sizeof(all_formats[0]))
static const struct export_ops *linked[NFORMATS + 1];

static void registry_init(void)
{
	size_t n = 0;

	if (linked[0])
		return;
	for (size_t i = 0; i < NFORMATS; i++)
		if (all_formats[i])
			linked[n++] = all_formats[i];
	linked[n] = NULL;
}

const struct export_ops *const *export_format_list(void)
{
	registry_init();
	return linked;
}

const struct export_ops *export_find(const char *name)
{
	registry_init();
	for (size_t i = 0; linked[i]; i++)
		if (strcmp(linked[i]->name, name) == 0)
			return linked[i];
	return NULL;
}
