/* SPDX-License-Identifier: MIT */
/*
 * ATF v2 on-disk layout: ../shared/specs/atf-v2.md with the corrections in NOTES.md §1
 * (index footer reserved[24]; detail header _reserved2[4] at offset 60).
 *
 * These packed structs document the byte layout and pin it with static asserts. Code never
 * reads or writes them by casting a buffer: atf_*_encode()/atf_*_decode() (user/atf/atf_codec.c)
 * go through the little-endian helpers in byteorder.h, so files are identical on any host.
 * Values held in these structs by the library are always in host order.
 */
#ifndef ATFTRACE_ATF_FORMAT_H
#define ATFTRACE_ATF_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define ATF_INDEX_MAGIC          "ATI2"
#define ATF_INDEX_FOOTER_MAGIC   "2ITA"
#define ATF_DETAIL_MAGIC         "ATD2"
#define ATF_DETAIL_FOOTER_MAGIC  "2DTA"

#define ATF_ENDIAN_LITTLE        1
#define ATF_VERSION              1

#define ATF_ARCH_X86_64          1
#define ATF_ARCH_ARM64           2
#define ATF_OS_LINUX             4
#define ATF_CLOCK_BOOTTIME       3

#define ATF_INDEX_FLAG_HAS_DETAIL 0x1u

#define ATF_HEADER_SIZE          64
#define ATF_FOOTER_SIZE          64
#define ATF_INDEX_EVENT_SIZE     32
#define ATF_DETAIL_EVENT_HDR_SIZE 24

/* Index event kinds. */
#define ATF_KIND_CALL            1
#define ATF_KIND_RETURN          2
#define ATF_KIND_EXCEPTION       3   /* a traced frame left by unwinding (C++ throw, longjmp) */

/* Detail event types. */
#define ATF_DETAIL_CALL          3
#define ATF_DETAIL_RETURN        4

/* Detail event flags (NOTES.md §6). */
#define ATF_DETAIL_F_STACK_ARGS  0x1u   /* gp[6..7] were read from the stack */
#define ATF_DETAIL_F_FP_TRUSTED  0x2u

#define ATF_NO_DETAIL            UINT32_MAX

#if defined(__x86_64__)
#define ATF_HOST_ARCH ATF_ARCH_X86_64
#elif defined(__aarch64__)
#define ATF_HOST_ARCH ATF_ARCH_ARM64
#else
#error "atftrace supports x86_64 and arm64 only"
#endif

struct __attribute__((packed)) atf_index_header {
	uint8_t  magic[4];
	uint8_t  endian;
	uint8_t  version;
	uint8_t  arch;
	uint8_t  os;
	uint32_t flags;
	uint32_t thread_id;
	uint8_t  clock_type;
	uint8_t  _reserved1[3];
	uint32_t _reserved2;
	uint32_t event_size;
	uint32_t event_count;
	uint64_t events_offset;
	uint64_t footer_offset;
	uint64_t time_start_ns;
	uint64_t time_end_ns;
};

struct __attribute__((packed)) atf_index_event {
	uint64_t timestamp_ns;
	uint64_t function_id;
	uint32_t thread_id;
	uint32_t event_kind;
	uint32_t call_depth;
	uint32_t detail_seq;
};

struct __attribute__((packed)) atf_index_footer {
	uint8_t  magic[4];
	uint32_t checksum;
	uint64_t event_count;
	uint64_t time_start_ns;
	uint64_t time_end_ns;
	uint64_t bytes_written;
	uint8_t  reserved[24];
};

struct __attribute__((packed)) atf_detail_header {
	uint8_t  magic[4];
	uint8_t  endian;
	uint8_t  version;
	uint8_t  arch;
	uint8_t  os;
	uint32_t flags;
	uint32_t thread_id;
	uint32_t _reserved1;
	uint64_t events_offset;
	uint64_t event_count;
	uint64_t bytes_length;
	uint64_t index_seq_start;
	uint64_t index_seq_end;
	uint8_t  _reserved2[4];
};

struct __attribute__((packed)) atf_detail_event_header {
	uint32_t total_length;
	uint16_t event_type;
	uint16_t flags;
	uint32_t index_seq;
	uint32_t thread_id;
	uint64_t timestamp;
};

/*
 * Detail function payload. arm64 exactly as the spec's DetailFunctionPayload; x86_64 uses the same
 * shape (NOTES.md §6, docs/detail-payload.md): gp[] = rdi rsi rdx rcx r8 r9 [rsp+8] [rsp+16] on calls,
 * rax rdx on returns; lr = return address; fp = rbp; sp = rsp.
 */
#define ATF_DETAIL_GP_REGS       8
#define ATF_DETAIL_MAX_STACK     256
struct __attribute__((packed)) atf_detail_payload {
	uint64_t function_id;
	uint64_t gp[ATF_DETAIL_GP_REGS];
	uint64_t lr;
	uint64_t fp;
	uint64_t sp;
	uint16_t stack_size;
	uint16_t _reserved;
	/* uint8_t stack[stack_size] follows */
};

struct __attribute__((packed)) atf_detail_footer {
	uint8_t  magic[4];
	uint32_t checksum;
	uint64_t event_count;
	uint64_t bytes_length;
	uint64_t time_start_ns;
	uint64_t time_end_ns;
	uint8_t  reserved[24];
};

#define ATF_DETAIL_PAYLOAD_SIZE  100

_Static_assert(sizeof(struct atf_index_header) == ATF_HEADER_SIZE, "index header is 64 bytes");
_Static_assert(sizeof(struct atf_index_event) == ATF_INDEX_EVENT_SIZE, "index event is 32 bytes");
_Static_assert(sizeof(struct atf_index_footer) == ATF_FOOTER_SIZE, "index footer is 64 bytes");
_Static_assert(sizeof(struct atf_detail_header) == ATF_HEADER_SIZE, "detail header is 64 bytes");
_Static_assert(sizeof(struct atf_detail_event_header) == ATF_DETAIL_EVENT_HDR_SIZE, "detail event header is 24 bytes");
_Static_assert(sizeof(struct atf_detail_payload) == ATF_DETAIL_PAYLOAD_SIZE, "detail payload is 100 bytes");
_Static_assert(sizeof(struct atf_detail_footer) == ATF_FOOTER_SIZE, "detail footer is 64 bytes");
_Static_assert(offsetof(struct atf_index_header, event_size) == 24, "NOTES.md §1");
_Static_assert(offsetof(struct atf_index_header, time_start_ns) == 48, "NOTES.md §1");
_Static_assert(offsetof(struct atf_index_event, detail_seq) == 28, "NOTES.md §1");
_Static_assert(offsetof(struct atf_index_footer, bytes_written) == 32, "NOTES.md §1");
_Static_assert(offsetof(struct atf_detail_header, events_offset) == 20, "NOTES.md §1");
_Static_assert(offsetof(struct atf_detail_header, index_seq_end) == 52, "NOTES.md §1");
_Static_assert(offsetof(struct atf_detail_payload, stack_size) == 96, "NOTES.md §6");

#endif
