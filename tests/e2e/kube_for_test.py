#!/usr/bin/python3
"""kube_for_test.py IN OUT SUFFIX [OLD=NEW...]: the deploy/k8s YAML as the podman tests play it.

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

src, dst, suffix, *subs = sys.argv[1:]
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
yaml.safe_dump(doc, open(dst, "w"), sort_keys=False)
