#!/usr/bin/env bash
# The deployment files (deploy/) are checked by parsing them (test_podman_deploy.sh runs them).
# The fields the tracer relies on must be present, and the command lines they give atftrace
# must use options that the built binary really has.
source "$(dirname "$0")/lib.sh"
help=$T/record-help.txt
"$ATF" record --help > "$help" 2>&1 || fail "atftrace record --help failed"

/usr/bin/python3 - "$ROOT/deploy" "$help" <<'PY' || exit 1
import re, sys, yaml
deploy, helpfile = sys.argv[1], sys.argv[2]
help_text = open(helpfile).read()
errors = []
def check(cond, what):
    if not cond:
        errors.append(what)

def container(spec, name):
    for c in spec["containers"]:
        if c["name"] == name:
            return c
    errors.append(f"no container named {name}")
    return {}

def caps(c):
    return set(c.get("securityContext", {}).get("capabilities", {}).get("add", []))

def mounts(c):
    return {m["mountPath"]: m for m in c.get("volumeMounts", [])}

def host_paths(spec):
    return {v["name"]: v["hostPath"]["path"] for v in spec.get("volumes", []) if "hostPath" in v}

def check_options(args, where):
    for a in args:
        if a.startswith("-"):
            opt = a.split("=")[0]
            check(re.search(r"(^|[\s,])" + re.escape(opt) + r"\b", help_text), f"{where}: option {opt} is not in 'atftrace record --help'")

# sidecar pod
pod = yaml.safe_load(open(f"{deploy}/k8s/sidecar-pod.yaml"))
spec = pod["spec"]
check(spec.get("shareProcessNamespace") is True, "sidecar: shareProcessNamespace must be true")
sc = container(spec, "atftrace")
check({"BPF", "PERFMON", "SYS_PTRACE"} <= caps(sc), "sidecar: needs CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE")
m = mounts(sc)
check("/sys/kernel/btf" in m and m["/sys/kernel/btf"].get("readOnly"), "sidecar: BTF mounted read-only")
check(host_paths(spec).get(m.get("/sys/kernel/btf", {}).get("name")) == "/sys/kernel/btf", "sidecar: BTF from the host")
check("/traces" in m, "sidecar: /traces mounted")
check(sc.get("command") == ["/usr/local/bin/atftrace-sidecar"], "sidecar: runs the entrypoint the image installs")
check(any(e["name"] == "TARGET_COMM" for e in sc.get("env", [])), "sidecar: TARGET_COMM set (the entrypoint requires it)")
check(spec.get("terminationGracePeriodSeconds", 30) >= 10, "sidecar: grace period lets the recorder finalize")
entry = open(f"{deploy}/sidecar-entrypoint.sh").read()
m2 = re.search(r"atftrace record (.*)", entry)
check(m2 is not None, "entrypoint: runs atftrace record")
if m2:
    # options of commands substituted inside the line, like $(date -u ...), are not atftrace's
    check_options(re.sub(r"\$\([^)]*\)", "", m2.group(1)).split(), "entrypoint")

# DaemonSet
ds = yaml.safe_load(open(f"{deploy}/k8s/daemonset.yaml"))
tspec = ds["spec"]["template"]["spec"]
check(tspec.get("hostPID") is True, "daemonset: hostPID must be true for system-wide sessions")
dc = container(tspec, "atftrace")
args = dc.get("args", [])
check(args[:2] == ["record", "-a"], "daemonset: runs a system-wide record (-a)")
check_options(args[1:], "daemonset")
for i, a in enumerate(args):
    if a == "-f":
        check(":" in args[i + 1], f"daemonset: -f {args[i+1]} must name MODULE:GLOB in system-wide mode")
    if a == "-o":
        check(any(args[i + 1].startswith(p) for p in mounts(dc)), "daemonset: -o must be under a mounted volume")
check({"BPF", "PERFMON", "SYS_PTRACE"} <= caps(dc), "daemonset: needs CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE")
check(host_paths(tspec).get("traces") == "/var/lib/atftrace", "daemonset: traces written to a host path")
check("/sys/fs/cgroup" in mounts(dc), "daemonset: cgroupfs mounted for --cgroup/--container")

# Containerfile: Debian 12, runtime libraries for everything the binary links
cf = open(f"{deploy}/Containerfile").read()
check(re.search(r"^FROM debian:12", cf, re.M), "Containerfile: builds on Debian 12")
for lib in ["libbpf1", "libelf1", "libdw1", "liblz4-1", "libjansson4", "libzydis4.0", "libncursesw6", "zlib1g"]:
    check(lib in cf, f"Containerfile: runtime package {lib} missing")
check("scripts/deps.sh" in cf, "Containerfile: installs build deps with scripts/deps.sh")

for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
PY
# The runtime packages must cover every library the binary really links.
for so in $(ldd "$ATF" | awk '/=>/ {print $1}'); do
	case $so in
	libbpf.so*|libelf.so*|libdw.so*|liblz4.so*|libjansson.so*|libZydis.so*|libZycore.so*|libncursesw.so*|libtinfo.so*|libz.so*|libc.so*|libm.so*|libpthread.so*|linux-vdso*|ld-linux*|libzstd.so*|liblzma.so*|libbz2.so*) ;;
	*) fail "atftrace links $so, which deploy/Containerfile does not install" ;;
	esac
done
echo "deploy files OK"
