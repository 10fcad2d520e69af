// SPDX-License-Identifier: MIT
/*
 * ATF v2 codec: host-order structs <-> little-endian file bytes, error names and the CRC.
 *
 * Offsets are those of the reference reader (../shared/specs/NOTES.md §1), not the spec text:
 * the index footer has reserved[24] and the detail header ends with _reserved2[4] at 60.
 * Every field goes through the put_le and get_le helpers so the bytes are identical on any host; the
 * packed structs in atf_format.h are never cast onto a buffer.
 */
#include <string.h>
#include <zlib.h>

#include "atf.h"
#include "byteorder.h"

static const char *const atf_error_names[ATF_E_END - ATF_E_BASE] = {
	[ATF_E_MAGIC - ATF_E_BASE] = "wrong magic bytes",
	[ATF_E_VERSION - ATF_E_BASE] = "unsupported endian, version or event size",
	[ATF_E_TRUNCATED - ATF_E_BASE] = "file truncated",
	[ATF_E_FOOTER - ATF_E_BASE] = "footer missing or disagreeing with the header",
	[ATF_E_COUNT - ATF_E_BASE] = "event count disagrees with the data",
	[ATF_E_CRC - ATF_E_BASE] = "checksum mismatch",
	[ATF_E_TIME_ORDER - ATF_E_BASE] = "timestamps go backwards within a thread",
	[ATF_E_RECORD - ATF_E_BASE] = "malformed record",
	[ATF_E_NESTING - ATF_E_BASE] = "call nesting inconsistent",
	[ATF_E_LINK - ATF_E_BASE] = "index/detail link dangling or not reciprocal",
	[ATF_E_SYMBOL - ATF_E_BASE] = "function id not in the manifest",
	[ATF_E_MANIFEST - ATF_E_BASE] = "manifest missing, malformed or inconsistent",
	[ATF_E_RANGE - ATF_E_BASE] = "sequence number out of range",
	[ATF_E_NOT_SESSION - ATF_E_BASE] = "not a session: no manifest.json and no pid_* directories",
};

/**
 * atf_strerror - message for a negative libatf error or a negative errno
 * @err: -ATF_E_* or -errno (a positive value is accepted too)
 *
 * Returns a static string; never NULL, also for values outside both ranges.
 */
const char *atf_strerror(int err)
{
	/* INT_MIN has no positive counterpart; it is no valid code anyway. */
	unsigned int code = err < 0 ? 0u - (unsigned int)err : (unsigned int)err;

	if (code == 0)
		return "success";
	if (code >= ATF_E_BASE && code < ATF_E_END)
		return atf_error_names[code - ATF_E_BASE];
	if (code < ATF_E_BASE)
		return strerror((int)code);
	return "unknown error";
}

/**
 * atf_crc32 - CRC-32/ISO-HDLC (zlib crc32), chainable: start with crc = 0
 *
 * zlib takes a uInt length, so large buffers are fed in pieces.
 */
uint32_t atf_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uLong c = crc;

	while (len > 0) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;

		c = crc32(c, p, n);
		p += n;
		len -= n;
	}
	return (uint32_t)c;
}

/* ---- index file ------------------------------------------------------------------------ */

void atf_index_header_encode(uint8_t out[ATF_HEADER_SIZE], const struct atf_index_header *h)
{
	memset(out, 0, ATF_HEADER_SIZE);
	memcpy(out + 0, h->magic, 4);
	out[4] = h->endian;
	out[5] = h->version;
	out[6] = h->arch;
	out[7] = h->os;
	put_le32(out + 8, h->flags);
	put_le32(out + 12, h->thread_id);
	out[16] = h->clock_type;
	memcpy(out + 17, h->_reserved1, 3);
	put_le32(out + 20, h->_reserved2);
	put_le32(out + 24, h->event_size);
	put_le32(out + 28, h->event_count);
	put_le64(out + 32, h->events_offset);
	put_le64(out + 40, h->footer_offset);
	put_le64(out + 48, h->time_start_ns);
	put_le64(out + 56, h->time_end_ns);
}

void atf_index_header_decode(struct atf_index_header *h, const uint8_t in[ATF_HEADER_SIZE])
{
	memcpy(h->magic, in + 0, 4);
	h->endian = in[4];
	h->version = in[5];
	h->arch = in[6];
	h->os = in[7];
	h->flags = get_le32(in + 8);
	h->thread_id = get_le32(in + 12);
	h->clock_type = in[16];
	memcpy(h->_reserved1, in + 17, 3);
	h->_reserved2 = get_le32(in + 20);
	h->event_size = get_le32(in + 24);
	h->event_count = get_le32(in + 28);
	h->events_offset = get_le64(in + 32);
	h->footer_offset = get_le64(in + 40);
	h->time_start_ns = get_le64(in + 48);
	h->time_end_ns = get_le64(in + 56);
}

void atf_index_event_encode(uint8_t out[ATF_INDEX_EVENT_SIZE], const struct atf_index_event *e)
{
	put_le64(out + 0, e->timestamp_ns);
	put_le64(out + 8, e->function_id);
	put_le32(out + 16, e->thread_id);
	put_le32(out + 20, e->event_kind);
	put_le32(out + 24, e->call_depth);
	put_le32(out + 28, e->detail_seq);
}

void atf_index_event_decode(struct atf_index_event *e, const uint8_t in[ATF_INDEX_EVENT_SIZE])
{
	e->timestamp_ns = get_le64(in + 0);
	e->function_id = get_le64(in + 8);
	e->thread_id = get_le32(in + 16);
	e->event_kind = get_le32(in + 20);
	e->call_depth = get_le32(in + 24);
	e->detail_seq = get_le32(in + 28);
}

void atf_index_footer_encode(uint8_t out[ATF_FOOTER_SIZE], const struct atf_index_footer *f)
{
	memset(out, 0, ATF_FOOTER_SIZE);
	memcpy(out + 0, f->magic, 4);
	put_le32(out + 4, f->checksum);
	put_le64(out + 8, f->event_count);
	put_le64(out + 16, f->time_start_ns);
	put_le64(out + 24, f->time_end_ns);
	put_le64(out + 32, f->bytes_written);
	memcpy(out + 40, f->reserved, sizeof(f->reserved));
}

void atf_index_footer_decode(struct atf_index_footer *f, const uint8_t in[ATF_FOOTER_SIZE])
{
	memcpy(f->magic, in + 0, 4);
	f->checksum = get_le32(in + 4);
	f->event_count = get_le64(in + 8);
	f->time_start_ns = get_le64(in + 16);
	f->time_end_ns = get_le64(in + 24);
	f->bytes_written = get_le64(in + 32);
	memcpy(f->reserved, in + 40, sizeof(f->reserved));
}

/* ---- detail file ----------------------------------------------------------------------- */

void atf_detail_header_encode(uint8_t out[ATF_HEADER_SIZE], const struct atf_detail_header *h)
{
	memset(out, 0, ATF_HEADER_SIZE);
	memcpy(out + 0, h->magic, 4);
	out[4] = h->endian;
	out[5] = h->version;
	out[6] = h->arch;
	out[7] = h->os;
	put_le32(out + 8, h->flags);
	put_le32(out + 12, h->thread_id);
	put_le32(out + 16, h->_reserved1);
	put_le64(out + 20, h->events_offset);
	put_le64(out + 28, h->event_count);
	put_le64(out + 36, h->bytes_length);
	put_le64(out + 44, h->index_seq_start);
	put_le64(out + 52, h->index_seq_end);
	memcpy(out + 60, h->_reserved2, 4);
}

void atf_detail_header_decode(struct atf_detail_header *h, const uint8_t in[ATF_HEADER_SIZE])
{
	memcpy(h->magic, in + 0, 4);
	h->endian = in[4];
	h->version = in[5];
	h->arch = in[6];
	h->os = in[7];
	h->flags = get_le32(in + 8);
	h->thread_id = get_le32(in + 12);
	h->_reserved1 = get_le32(in + 16);
	h->events_offset = get_le64(in + 20);
	h->event_count = get_le64(in + 28);
	h->bytes_length = get_le64(in + 36);
	h->index_seq_start = get_le64(in + 44);
	h->index_seq_end = get_le64(in + 52);
	memcpy(h->_reserved2, in + 60, 4);
}

void atf_detail_event_header_encode(uint8_t out[ATF_DETAIL_EVENT_HDR_SIZE],
				    const struct atf_detail_event_header *h)
{
	put_le32(out + 0, h->total_length);
	put_le16(out + 4, h->event_type);
	put_le16(out + 6, h->flags);
	put_le32(out + 8, h->index_seq);
	put_le32(out + 12, h->thread_id);
	put_le64(out + 16, h->timestamp);
}

void atf_detail_event_header_decode(struct atf_detail_event_header *h,
				    const uint8_t in[ATF_DETAIL_EVENT_HDR_SIZE])
{
	h->total_length = get_le32(in + 0);
	h->event_type = get_le16(in + 4);
	h->flags = get_le16(in + 6);
	h->index_seq = get_le32(in + 8);
	h->thread_id = get_le32(in + 12);
	h->timestamp = get_le64(in + 16);
}

/* Layout: NOTES.md §6 (x86_64 uses the arm64 DetailFunctionPayload shape). */
void atf_detail_payload_encode(uint8_t out[ATF_DETAIL_PAYLOAD_SIZE], const struct atf_detail_payload *p)
{
	put_le64(out + 0, p->function_id);
	for (int i = 0; i < ATF_DETAIL_GP_REGS; i++)
		put_le64(out + 8 + 8 * i, p->gp[i]);
	put_le64(out + 72, p->lr);
	put_le64(out + 80, p->fp);
	put_le64(out + 88, p->sp);
	put_le16(out + 96, p->stack_size);
	put_le16(out + 98, p->_reserved);
}

void atf_detail_payload_decode(struct atf_detail_payload *p, const uint8_t in[ATF_DETAIL_PAYLOAD_SIZE])
{
	p->function_id = get_le64(in + 0);
	for (int i = 0; i < ATF_DETAIL_GP_REGS; i++)
		p->gp[i] = get_le64(in + 8 + 8 * i);
	p->lr = get_le64(in + 72);
	p->fp = get_le64(in + 80);
	p->sp = get_le64(in + 88);
	p->stack_size = get_le16(in + 96);
	p->_reserved = get_le16(in + 98);
}

void atf_detail_footer_encode(uint8_t out[ATF_FOOTER_SIZE], const struct atf_detail_footer *f)
{
	memset(out, 0, ATF_FOOTER_SIZE);
	memcpy(out + 0, f->magic, 4);
	put_le32(out + 4, f->checksum);
	put_le64(out + 8, f->event_count);
	put_le64(out + 16, f->bytes_length);
	put_le64(out + 24, f->time_start_ns);
	put_le64(out + 32, f->time_end_ns);
	memcpy(out + 40, f->reserved, sizeof(f->reserved));
}

void atf_detail_footer_decode(struct atf_detail_footer *f, const uint8_t in[ATF_FOOTER_SIZE])
{
	memcpy(f->magic, in + 0, 4);
	f->checksum = get_le32(in + 4);
	f->event_count = get_le64(in + 8);
	f->bytes_length = get_le64(in + 16);
	f->time_start_ns = get_le64(in + 24);
	f->time_end_ns = get_le64(in + 32);
	memcpy(f->reserved, in + 40, sizeof(f->reserved));
}
