// SPDX-License-Identifier: MIT
/*
 * The strings of typed arguments, from the ring record to the detail record (recorder_int.h:
 * rec_args_extension).
 *
 * A probe cannot read a string whose page is not in memory yet (a BPF program cannot fault a
 * page in): a constant a program passes before it ever read that page of its file, such as
 * getenv("HOME") early in a run. When the pointer lies in a mapping that nobody can write (text,
 * .rodata, a read-only file mapping), what is there now is what was there at the call, so the
 * recorder reads it from /proc/PID/mem instead (which faults the file page in, as the callee's
 * own read would have). A pointer in writable memory, or that the process no longer maps, stays
 * marked unreadable.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "args.h"
#include "atf_args.h"
#include "atftrace.h"
#include "byteorder.h"
#include "recorder_int.h"

/* How many bytes from @addr up to the end of its mapping, when that mapping is not writable. */
static uint64_t readonly_room(pid_t pid, uint64_t addr)
{
	char path[64], line[512], perms[8];
	uint64_t lo, hi, room = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s", &lo, &hi, perms) != 3)
			continue;
		if (addr >= lo && addr < hi) {
			room = perms[0] == 'r' && perms[1] != 'w' ? hi - addr : 0;
			break;
		}
	}
	fclose(f);
	return room;
}

/*
 * The string at @addr of process @pid, if it is in a read-only mapping: into @out (at most @cap
 * bytes), its length returned and *@status set (ATF_ARG_STR_OK or _TRUNCATED); -1 otherwise.
 */
static int read_constant(pid_t pid, uint64_t addr, uint8_t *out, size_t cap, uint8_t *status)
{
	uint8_t buf[ARGS_MAX_STR_BYTES + 1];
	uint64_t room = readonly_room(pid, addr);
	size_t want = cap + 1 < room ? cap + 1 : (size_t)room;
	char path[64];
	ssize_t n;
	uint8_t *nul;
	int fd;

	if (!room || cap > ARGS_MAX_STR_BYTES)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = pread(fd, buf, want, (off_t)addr);
	close(fd);
	if (n <= 0)
		return -1;
	nul = memchr(buf, 0, (size_t)n);
	if (nul) {
		memcpy(out, buf, (size_t)(nul - buf));
		*status = ATF_ARG_STR_OK;
		return (int)(nul - buf);
	}
	if ((size_t)n < cap + 1)
		return -1;      /* the mapping ends before the string does */
	memcpy(out, buf, cap);
	*status = ATF_ARG_STR_TRUNCATED;
	return (int)cap;
}

int rec_args_extension(const uint8_t *rec, size_t room, const struct rec_detail *rd, pid_t pid, uint8_t *out)
{
	struct rec_args ra;
	size_t off = ATF_ARGS_STR_HDR;
	uint32_t args_off = rd->args_off;
	unsigned count = 0;

	if (!args_off)
		return 0;
	if (args_off > room || room - args_off < sizeof(ra))
		return -1;
	memcpy(&ra, rec + args_off, sizeof(ra));
	if (ra.count > ARGS_MAX_STR || ra.area < 2 || ra.area > ARGS_MAX_STR_BYTES + 1 ||
	    room - args_off - sizeof(ra) < (size_t)ARGS_MAX_STR * ra.area)
		return -1;
	memcpy(out, ATF_ARGS_STR_MAGIC, 4);
	for (unsigned i = 0; i < ra.count; i++) {
		const struct rec_args_str *s = &ra.s[i];
		uint8_t status = s->status;
		int len = s->len;

		if (s->slot == ARGS_SLOT_NONE)
			continue;
		if (s->len >= ra.area || s->slot >= 8)
			return -1;
		if (status == ATF_ARG_STR_FAULT)
			len = read_constant(pid, rd->gp[s->slot], out + off + 4, ra.area - 1, &status);
		if (status == ATF_ARG_STR_FAULT || len < 0) {
			status = ATF_ARG_STR_FAULT;
			len = 0;
		} else if (s->status != ATF_ARG_STR_FAULT) {
			memcpy(out + off + 4, rec + args_off + sizeof(ra) + (size_t)i * ra.area, (size_t)len);
		}
		out[off] = s->slot;
		out[off + 1] = status;
		put_le16(out + off + 2, (uint16_t)len);
		off += ATF_ARGS_STR_ENTRY_HDR + (size_t)len;
		count++;
	}
	put_le16(out + 4, (uint16_t)count);
	put_le16(out + 6, 0);
	return (int)off;
}
