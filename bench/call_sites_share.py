#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The share of traced calls that take record --call-sites' fast path (bench/bench_call_sites.sh).

call_sites_share.py ATFTRACE OUTDIR WORKLOAD_FILE -f SPEC... -- CMD...
Runs `ATFTRACE record --call-sites -v` on CMD, whose stdin is WORKLOAD_FILE's text followed by
a line that makes it print MARK; once MARK is printed (the workload is done, the session still
runs), reads how often this session's function-block entry programs ran (atf_site_fn_entry, the
entry block E_f that direct, PLT and indirect stubs call; atf_site_tail, the tail entry T_f;
atf_site_plain (a session link: two runs a call) or atf_site_plain_entry (multi links), the plain
entries P_f that the jumps no stub takes are sent to: the recorder's own BPF programs, found through its /proc/PID/fdinfo, so that other sessions on the
host do not count), then ends CMD.
Prints: sites redirected, calls through any stub (direct, PLT, indirect or tail), calls recorded
(events / 2), the share of calls that avoid the functions' own entries (through any stub or a
plain entry), indirect sites redirected, how many of the calls through stubs were tail calls,
and the calls through plain entries. (Direct and indirect calls share E_f: they are not told apart.)
BPF run counts need the kernel's statistics: held on with BPF_ENABLE_STATS while this runs.
"""
import ctypes, json, os, re, subprocess, sys, tempfile, time

BPF_ENABLE_STATS = 32


def enable_stats():
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(128)        # enable_stats.type = BPF_STATS_RUN_TIME (0)
    fd = libc.syscall(321, BPF_ENABLE_STATS, attr, 128)   # __NR_bpf on x86_64
    return fd                                       # held open: statistics stay on


def progs(pid):
    """The BPF programs process PID holds a descriptor of, by id."""
    ids = set()
    fdinfo = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(fdinfo):
        try:
            m = re.search(r"^prog_id:\s*(\d+)", open(os.path.join(fdinfo, fd)).read(), re.M)
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    out = {}
    for i in ids:
        r = subprocess.run(["bpftool", "prog", "show", "id", str(i), "--json"], capture_output=True,
                           text=True).stdout
        if r:
            out[i] = json.loads(r)
    return out


def main():
    atf, outdir, workload = sys.argv[1:4]
    rest = sys.argv[4:]
    sep = rest.index("--")
    specs, cmd = rest[:sep], rest[sep + 1:]
    stats_fd = enable_stats()
    ready = tempfile.mktemp(prefix="atf-share-ready.")
    err = open(outdir + ".err", "w")
    rec = subprocess.Popen([atf, "record", "--call-sites", "-v", "-o", outdir, "--ready-file", ready]
                           + specs + ["--"] + cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=err, text=True)
    deadline = time.time() + 120
    while not os.path.exists(ready):
        if rec.poll() is not None or time.time() > deadline:
            sys.exit("the recording did not start: see " + outdir + ".err")
        time.sleep(0.05)
    rec.stdin.write(open(workload).read())
    rec.stdin.flush()
    for line in rec.stdout:
        if line.strip().endswith("MARK"):
            break
    new = list(progs(rec.pid).values())
    # atf_site_fn_entry (program names are cut to 15 characters)
    site = sum(p.get("run_cnt", 0) for p in new if p.get("name", "").startswith("atf_site_fn_ent"))
    tail = sum(p.get("run_cnt", 0) for p in new if p.get("name") == "atf_site_tail")
    # a session link's program runs twice a call (entry and return), multi links' entry once
    plain = sum(p.get("run_cnt", 0) // (2 if p.get("name") == "atf_site_plain" else 1)
                for p in new if p.get("name", "").startswith("atf_site_plain"))    # names are cut to 15
    rec.stdin.close()
    rec.stdout.read()
    rec.wait()
    err.close()
    text = open(outdir + ".err").read()
    events = int(re.search(r"(\d+) events", text).group(1))
    lost = re.search(r"events.*?, (\d+) lost", text)
    nsites = sum(int(n) for n in re.findall(r": (\d+) call sites? of", text))
    nind = sum(int(n) for n in re.findall(r": (\d+) indirect call sites? redirected", text))
    calls = events // 2
    os.close(stats_fd) if stats_fd >= 0 else None
    print("sites %d stub_calls %d calls %d lost %s share %.1f%% ind_sites %d tail_calls %d plain_calls %d" %
          (nsites, site + tail, calls, lost.group(1) if lost else "?",
           100.0 * (site + tail + plain) / calls if calls else 0, nind, tail, plain))


main()
