#!/usr/bin/python3
"""kube_for_test.py IN OUT SUFFIX [OLD=NEW...]: the deploy/k8s YAML as the podman tests play it.
kube_for_test.py --podman-run IN - SUFFIX [OLD=NEW...]: instead, the `podman run` arguments (one a
line) of its pod's one container, for what podman 4.3's kube play does not honour (hostPID).

Everything else is kept as written:
  - the names of the pod and of its volumes get SUFFIX, so nothing collides with what a user has
    (podman makes a named volume for an emptyDir);
  - images named OLD are replaced by local test images NEW (no registry serves registry.example);
  - a hostPath OLD is replaced by NEW (a test's own directory, not the host's /var/lib);
  - a DaemonSet, which podman 4.3 cannot play, becomes the Pod of its template: the one pod the
    DaemonSet would run on this node.
"""
import sys
import yaml

args = sys.argv[1:]
podman_run = args[0] == "--podman-run"
src, dst, suffix, *subs = args[1:] if podman_run else args
swap = dict(s.split("=", 1) for s in subs)
doc = yaml.safe_load(open(src))
if doc["kind"] == "DaemonSet":
    tmpl = doc["spec"]["template"]
    doc = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": doc["metadata"]["name"], "labels": tmpl["metadata"].get("labels", {})},
           "spec": tmpl["spec"]}
doc["metadata"]["name"] += suffix
spec = doc["spec"]
renamed = {}
for v in spec.get("volumes", []):
    renamed[v["name"]] = v["name"] + suffix
    v["name"] = renamed[v["name"]]
    if "hostPath" in v:
        v["hostPath"]["path"] = swap.get(v["hostPath"]["path"], v["hostPath"]["path"])
for c in spec["containers"]:
    c["image"] = swap.get(c["image"], c["image"])
    for m in c.get("volumeMounts", []):
        m["name"] = renamed[m["name"]]
if not podman_run:
    yaml.safe_dump(doc, open(dst, "w"), sort_keys=False)
    sys.exit(0)

# The fields deploy/k8s uses, each to its podman run option; any other field is an error, so
# nothing in the YAML is silently left out of the test.
KNOWN_SPEC = {"hostPID", "terminationGracePeriodSeconds", "containers", "volumes"}
KNOWN_CTR = {"name", "image", "args", "command", "env", "securityContext", "volumeMounts"}
(c,) = spec["containers"]
unknown = (set(spec) - KNOWN_SPEC) | (set(c) - KNOWN_CTR)
if unknown:
    sys.exit(f"kube_for_test.py: no podman run option for {sorted(unknown)}")
out = ["--name", f"{doc['metadata']['name']}-{c['name']}"]
if spec.get("hostPID"):
    out += ["--pid", "host"]
if "terminationGracePeriodSeconds" in spec:
    out += ["--stop-timeout", str(spec["terminationGracePeriodSeconds"])]
sc = c.get("securityContext", {})
if "runAsUser" in sc:
    out += ["--user", str(sc["runAsUser"])]
caps = sc.get("capabilities", {})
out += [f"--cap-drop={x}" for x in caps.get("drop", [])] + [f"--cap-add={x}" for x in caps.get("add", [])]
for e in c.get("env", []):
    out += ["--env", f"{e['name']}={e['value']}"]
paths = {v["name"]: v["hostPath"] for v in spec.get("volumes", [])}
for m in c.get("volumeMounts", []):
    # hostPath only (every volume of the DaemonSet); DirectoryOrCreate paths must exist here
    ro = str(m.get("readOnly", False)).lower()
    out += ["--mount", f"type=bind,src={paths[m['name']]['path']},dst={m['mountPath']},ro={ro}"]
if "command" in c:
    out += ["--entrypoint", c["command"][0]]
out.append(c["image"])
out += c.get("command", [])[1:] + c.get("args", [])
print("\n".join(out))
