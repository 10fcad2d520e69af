// SPDX-License-Identifier: MIT
/*
 * A detail record's typed arguments as text (include/atf_args.h): what dump prints in a call's
 * parentheses and after "=", and what the exporters put in their argument fields.
 */
#include <string.h>
#include "atf.h"
#include "atf_args.h"

int atf_args_detail_text(const struct atf_args *set, const struct atf_detail_event *d, uint32_t kind,
			 bool arm64, char *buf, size_t len)
{
	const struct atf_arg_spec *spec;
	struct atf_arg_str strs[ATF_ARGS_MAX_STR];
	size_t used, total;
	int n = 0;

	buf[0] = '\0';
	if (!set || !d || !d->has_payload || !(spec = atf_args_find(set, d->payload.function_id)))
		return 0;
	used = ATF_DETAIL_EVENT_HDR_SIZE + ATF_DETAIL_PAYLOAD_SIZE + d->payload.stack_size;
	total = d->hdr.total_length;
	if (total > used)
		n = atf_args_strings(d->raw + used, total - used, strs);
	if (n < 0)
		n = 0;          /* a malformed block: strings print as their pointers */
	if (kind == ATF_KIND_CALL) {
		/* x86_64: gp[6..7] are stack arguments only when flag bit 0 says they were read */
		unsigned ngp = arm64 || (d->hdr.flags & ATF_DETAIL_F_STACK_ARGS) ? 8 : 6;
		uint64_t gp[ATF_DETAIL_GP_REGS];

		memcpy(gp, d->payload.gp, sizeof(gp));
		atf_args_format_call(set, spec, gp, ngp, strs, n, buf, len);
		return 1;
	}
	return atf_args_format_ret(set, spec, d->payload.gp[0], strs, n, buf, len) ? 1 : 0;
}
