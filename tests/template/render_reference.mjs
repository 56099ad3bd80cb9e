// Reference renderings for ember's chat-template parity test, produced by @huggingface/jinja (the JS
// Jinja used by transformers.js and the HF hub). Usage:
//   node render_reference.mjs <templates_dir> <cases.json>
//   node render_reference.mjs --snippets <snippets.json>
// Prints one JSON array: for every template file (*.jinja, with its special tokens from
// <templates_dir>/tokens.json) and every case, {template, case, ok, output} or {template, case, ok:false,
// error}. strftime_now() must not read the real clock: the date is pinned (in UTC) to FIXED_TIME below,
// the same instant the C++ side passes as its clock.
import { readFileSync, readdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

process.env.TZ = "UTC";
const FIXED_TIME = Date.UTC(2024, 6, 26, 10, 30, 0);  // 2024-07-26T10:30:00Z
const RealDate = Date;
globalThis.Date = class extends RealDate {
  constructor(...args) {
    super(...(args.length === 0 ? [FIXED_TIME] : args));
  }
  static now() {
    return FIXED_TIME;
  }
};

// The package lives with the other JS peers of the repo.
const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, "../../peers/llamacpp/package.json"));
const { Template } = require("@huggingface/jinja");

// Snippet mode: [{name, template, context}] -> [{name, ok, output | error}].
if (process.argv[2] === "--snippets") {
  const snippets = JSON.parse(readFileSync(process.argv[3], "utf8"));
  const out = snippets.map(({ name, template, context }) => {
    try {
      return { name, ok: true, output: new Template(template).render(context ?? {}) };
    } catch (e) {
      return { name, ok: false, error: String(e.message ?? e) };
    }
  });
  process.stdout.write(JSON.stringify(out));
  process.exit(0);
}

const [templatesDir, casesPath] = process.argv.slice(2);
const tokens = JSON.parse(readFileSync(join(templatesDir, "tokens.json"), "utf8"));
const cases = JSON.parse(readFileSync(casesPath, "utf8"));
const results = [];
for (const file of readdirSync(templatesDir).filter((f) => f.endsWith(".jinja")).sort()) {
  const name = file.replace(/\.jinja$/, "");
  const source = readFileSync(join(templatesDir, file), "utf8");
  let template = null;
  let parseError = null;
  try {
    template = new Template(source);
  } catch (e) {
    parseError = String(e.message ?? e);
  }
  for (const c of cases) {
    const context = { ...c.context, ...(tokens[name] ?? {}) };
    if (!template) {
      results.push({ template: name, case: c.name, ok: false, error: parseError });
      continue;
    }
    try {
      results.push({ template: name, case: c.name, ok: true, output: template.render(context) });
    } catch (e) {
      results.push({ template: name, case: c.name, ok: false, error: String(e.message ?? e) });
    }
  }
}
process.stdout.write(JSON.stringify(results));
