// SPDX-License-Identifier: MIT
/*
 * The session's side of a trampoline area's patch log (include/patch_log.h): the header pages at
 * the start of each area say which module the area serves, which session owns it (the
 * recorder's pid and start time), and every jmp the session writes, with the bytes it replaced.
 * They are written through our descriptor of the memfd together with the trampolines, before
 * any jmp, and marked restored once the session wrote the original bytes back; so a session
 * that dies first leaves an area that `atftrace restore -p PID` can undo
 * (user/probe/trampoline_restore.c). The writer is the same for every kind of patch: the
 * call-site stubs' areas (user/patch/callsite.c) log their rel32 writes with it too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "patch_log.h"
#include "proc.h"
#include "trampoline_area.h"
#include "trampoline_int.h"

/* The hex build-id @hex as bytes; how many (0 when there is none or it is not hex). */
static uint32_t build_id_bytes(const char *hex, uint8_t *out)
{
	uint32_t n = 0;

	for (; hex && hex[0] && hex[1] && n < PATCH_LOG_MAX_BUILD_ID; hex += 2) {
		unsigned v;

		if (sscanf(hex, "%2x", &v) != 1)
			return 0;
		out[n++] = (uint8_t)v;
	}
	return hex && *hex ? 0 : n;
}

int ta_log_encode(const struct sym_module *m, uint64_t dev, uint64_t ino, uint64_t area,
		  const struct ta_maps *maps, const struct patch_record *recs, uint32_t n,
		  uint8_t *buf, uint32_t size, uint8_t **copy)
{
	struct patch_log log = { .state = PATCH_LOG_PATCHED, .owner_pid = (uint32_t)getpid(),
				 .area_addr = area, .dev = dev, .ino = ino,
				 .records = (struct patch_record *)recs, .nrecords = n };
	uint8_t *c;

	proc_start_time(getpid(), &log.owner_start);
	/* the executable mapping the patches are in: what restore checks is still there */
	for (size_t i = 0; n && i < maps->n; i++) {
		const struct ta_map *mp = &maps->v[i];

		if (mp->exec && mp->dev == dev && mp->ino == ino && recs[0].addr >= mp->lo &&
		    recs[0].addr < mp->hi) {
			log.map_addr = mp->lo;
			log.map_offset = mp->offset;
			log.map_size = mp->hi - mp->lo;
			break;
		}
	}
	log.build_id_len = build_id_bytes(m->build_id, log.build_id);
	snprintf(log.path, sizeof(log.path), "%s", m->path);
	if (patch_log_encode(&log, buf, size) != PATCH_LOG_OK)
		return -EINVAL;
	c = malloc(size);
	if (!c)
		return -ENOMEM;
	memcpy(c, buf, size);
	free(*copy);
	*copy = c;
	return 0;
}

void ta_log_mark_restored(int fd, uint8_t *copy, uint32_t size)
{
	if (fd < 0 || !copy || patch_log_set_state(copy, size, PATCH_LOG_RESTORED) != PATCH_LOG_OK)
		return;
	/* a failure leaves it "patched": restore then finds our bytes gone and writes nothing */
	if (pwrite(fd, copy, size, 0) != (ssize_t)size)
		return;
}

int tramp_log_init(struct tramp_mod *tm, const struct ta_maps *maps, uint8_t *buf, uint32_t size)
{
	struct patch_record *recs = calloc(tm->nfns ? tm->nfns : 1, sizeof(*recs));
	int err = -EINVAL;

	if (!recs)
		return -ENOMEM;
	for (size_t i = 0; i < tm->nfns; i++) {
		const struct tramp_fn *t = &tm->fns[i];

		if (patch_record_init(&recs[i], PATCH_KIND_ENTRY_JMP, t->patch_addr,
				      t->f->probe_offset, t->moved, t->jmp, TRAMP_JMP_LEN))
			goto cleanup;
	}
	err = ta_log_encode(tm->m, tm->dev, tm->ino, tm->area, maps, recs, (uint32_t)tm->nfns, buf,
			    size, &tm->log);
	if (!err)
		tm->code_off = size;
cleanup:
	free(recs);
	return err;
}

void tramp_log_mark_restored(struct tramp_mod *tm)
{
	ta_log_mark_restored(tm->fd, tm->log, tm->code_off);
}
