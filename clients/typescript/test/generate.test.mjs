import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { generate } from "../scripts/generate-types.mjs";

const document = JSON.parse(readFileSync(new URL("../../../openapi/openapi.json", import.meta.url)));
const committed = readFileSync(new URL("../src/types.ts", import.meta.url), "utf8");

test("the committed types are what the OpenAPI document generates", () => {
  assert.equal(generate(document), committed);
});

test("a new field or operation changes the types; proxy routes and pages do not", () => {
  const changed = structuredClone(document);
  changed.components.schemas.PrepareOut.properties.hint = { type: "string" };
  changed.paths["/sessions/{session_id}/fork"] = { post: { responses: { 200: {} } } };
  const generated = generate(changed);
  assert.match(generated, /\n {2}hint\?: string;\n/);
  assert.match(generated, /\| "POST \/sessions\/\{session_id\}\/fork"/);

  const proxied = structuredClone(document);
  proxied.paths["/v1/chat/completions"] = {
    post: { responses: { 200: { content: { "application/json": { schema: {} } } } } },
  };
  const html = { 200: { content: { "text/html": { schema: { type: "string" } } } } };
  proxied.paths["/ui"] = { get: { responses: html } };
  assert.equal(generate(proxied), committed);
});
