// k8s_validate.mjs NPM_DIR FILE...: validate Kubernetes YAML against the Kubernetes API's JSON
// schemas (kubernetes-models, pinned by scripts/deps.sh under NPM_DIR). Each document's
// apiVersion and kind pick its model (apps/v1 DaemonSet -> kubernetes-models/apps/v1/DaemonSet);
// validate() checks types, enums, formats and required fields. Prints one line per document and
// exits 1 if any is invalid or of a kind the schemas do not know.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [npmDir, ...files] = process.argv.slice(2);
const modules = join(npmDir, "node_modules");
const { parseAllDocuments } = await import(pathToFileURL(join(modules, "yaml/dist/index.js")));
let bad = 0;
for (const file of files) {
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    if (doc.errors.length) {
      console.log(`${file}: YAML: ${doc.errors[0].message}`);
      bad++;
      continue;
    }
    const obj = doc.toJS();
    const where = `${file}: ${obj.apiVersion} ${obj.kind} ${obj.metadata?.name}`;
    let Model;
    try {
      const mod = await import(pathToFileURL(join(modules, "kubernetes-models", obj.apiVersion, `${obj.kind}.js`)));
      Model = mod[obj.kind];
    } catch {
      console.log(`${where}: no schema for this apiVersion and kind`);
      bad++;
      continue;
    }
    try {
      new Model(obj).validate();
      console.log(`${where}: valid`);
    } catch (e) {
      console.log(`${where}: INVALID: ${e.message}`);
      bad++;
    }
  }
}
process.exit(bad ? 1 : 0);
