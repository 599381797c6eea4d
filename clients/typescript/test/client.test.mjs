import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  CompactorAPIError,
  CompactorClient,
  OPERATION_METHODS,
  TRANSPORT_ERROR,
  UNEXPECTED_RESPONSE,
} from "../dist/index.js";
import { startService } from "./service.mjs";

const SUMMARY_MARKER = "[Context summary: the conversation before this point was compacted]";

function turns(n, size = 300) {
  const messages = [];
  for (let i = 0; i < n; i++) {
    messages.push({ role: "user", content: `step ${i}: please edit src/m${i}.py `.repeat(size) });
    messages.push({ role: "assistant", content: `edited src/m${i}.py, tests ok `.repeat(size) });
  }
  return messages;
}

function toolTurns(n) {
  const messages = [];
  for (let i = 0; i < n; i++) {
    messages.push({ role: "user", content: `read src/m${i}.py and fix it `.repeat(60) });
    messages.push({
      role: "assistant",
      content: null,
      tool_calls: [
        { id: `call_${i}`, type: "function", function: { name: "read", arguments: "{}" } },
      ],
    });
    messages.push({ role: "tool", tool_call_id: `call_${i}`, content: "x = 1\n".repeat(400) });
    messages.push({ role: "assistant", content: `fixed m${i} `.repeat(60) });
  }
  return messages;
}

let service;
let compactor;

before(async () => {
  service = await startService();
  compactor = new CompactorClient(service.url);
});

after(async () => {
  await service?.stop();
});

describe("the stateless calls", () => {
  test("health, readiness and metrics", async () => {
    assert.equal((await compactor.healthz()).status, "ok");
    const ready = await compactor.readyz();
    assert.equal(ready.status, "ready");
    assert.ok(ready.tokenizers.includes("o200k_base"));
    assert.match(await compactor.metrics(), /compactor/);
  });

  test("estimate counts every message and decides", async () => {
    const messages = turns(6);
    const estimate = await compactor.estimate({ messages, model: "gpt-4o", trigger_tokens: 4000 });
    assert.equal(estimate.per_message.length, messages.length);
    assert.ok(estimate.exact && estimate.tokens > 4000 && estimate.should_compact);
    assert.equal(estimate.breakdown.messages > 0, true);
  });

  test("compact folds the older part and keeps tool pairs", async () => {
    const messages = toolTurns(8);
    const result = await compactor.compact({
      messages,
      model: "gpt-4o",
      force: true,
      keep_recent_tokens: 1500,
      pinned: ["never touch the public parse() signature"],
    });
    assert.equal(result.compacted, true);
    assert.equal(result.strategy, "summarize");
    assert.ok(result.tokens_after < result.tokens_before);
    assert.ok(String(result.messages[0].content).startsWith(SUMMARY_MARKER));
    assert.match(result.summary ?? "", /never touch the public parse\(\) signature/);
    assert.deepEqual(result.messages.slice(1), messages.slice(result.cut_index ?? 0));
    assert.equal(result.summarizer?.provider, "extractive");
  });

  test("clearing tool results reports what it cleared", async () => {
    const result = await compactor.compact({
      messages: toolTurns(8),
      model: "gpt-4o",
      force: true,
      strategy: "clear_tool_results",
      clear: { keep: 2 },
    });
    assert.deepEqual(result.applied, ["clear_tool_results"]);
    assert.equal(result.cleared_tool_uses?.length, 6);
    assert.equal(result.cleared_tool_uses?.[0]?.tool_call_id, "call_0");
    assert.ok((result.tokens_cleared ?? 0) > 0);
  });

  test("the system prompt is assembled from the files found", async () => {
    const prompt = await compactor.assembleSystemPrompt({
      cwd: "/home/u/project",
      files: [{ path: "/home/u/project/AGENTS.md", content: "Run make test." }],
    });
    assert.match(prompt.system, /Run make test\./);
    assert.deepEqual(
      prompt.sources.map((s) => s.kind),
      ["base", "rules"],
    );
  });
});

describe("sessions", () => {
  test("the before-turn flow: append, prepare compacts, records, delete", async () => {
    const session = await compactor.createSession({
      model: "gpt-4o",
      format: "openai",
      system: "You are a coding agent.",
      trigger_tokens: 4000,
      keep_recent_tokens: 1000,
      pinned: ["keep the public interface"],
      metadata: { agent: "ts" },
    });
    assert.deepEqual(session.metadata, { agent: "ts" });
    assert.deepEqual(session.pinned, ["keep the public interface"]);
    const listed = await compactor.listSessions({ limit: 500 });
    assert.ok(listed.sessions.some((s) => s.id === session.id));

    const batch = turns(6);
    const first = await compactor.appendMessages(
      session.id,
      { messages: batch },
      { idempotencyKey: "b-1" },
    );
    assert.deepEqual([first.appended, first.first_seq, first.last_seq], [12, 0, 11]);
    const again = await compactor.appendMessages(
      session.id,
      { messages: batch },
      { idempotencyKey: "b-1" },
    );
    assert.deepEqual(again, first);
    const page = await compactor.transcript(session.id, { offset: 2, limit: 3 });
    assert.equal(page.total, 12);
    assert.deepEqual(page.messages, batch.slice(2, 5));

    const context = await compactor.context(session.id);
    assert.equal(context.estimate.should_compact, true);
    const prepared = await compactor.prepare(session.id);
    assert.equal(prepared.compacted, true);
    assert.equal(prepared.compaction?.trigger, "auto");
    assert.ok(prepared.context.estimate.tokens < context.estimate.tokens);

    await compactor.appendMessages(session.id, { messages: turns(4) });
    const manual = await compactor.compactSession(session.id, {
      reason: "manual",
      instructions: "files",
    });
    assert.equal(manual.compaction?.instructions, "files");
    const { compactions } = await compactor.compactions(session.id);
    assert.deepEqual(
      compactions.map((c) => c.trigger),
      ["auto", "manual"],
    );
    assert.equal(compactions[1]?.previous_id, compactions[0]?.id);

    await compactor.deleteSession(session.id);
    await assert.rejects(compactor.getSession(session.id), (error) => {
      assert.ok(error instanceof CompactorAPIError);
      assert.equal(error.status, 404);
      assert.equal(error.title, "Session not found");
      assert.match(error.type, /session-not-found$/);
      return true;
    });
  });
});

describe("recall and control", () => {
  test("search, preview, revert, fork, settings changes, export and import", async () => {
    const session = await compactor.createSession({ trigger_tokens: 4000, keep_recent_tokens: 1000 });
    const planted = { role: "assistant", content: "The release codename is HALIBUT." };
    await compactor.appendMessages(session.id, { messages: [...turns(3), planted, ...turns(6)] });
    const preview = await compactor.prepare(session.id, { dry_run: true });
    assert.equal(preview.dry_run, true);
    assert.equal(preview.compaction?.id, "dry-run");
    assert.deepEqual((await compactor.compactions(session.id)).compactions, []);
    const done = await compactor.prepare(session.id);
    assert.equal(done.compacted, true);
    const found = await compactor.search(session.id, "codename", { limit: 5, foldedOnly: true });
    assert.deepEqual(
      found.hits.map((h) => [h.seq, h.folded]),
      [[6, true]],
    );
    const reverted = await compactor.revert(session.id, done.compaction.id);
    assert.equal(reverted.compaction.trigger, "revert");
    assert.equal(reverted.compaction.reverted_id, done.compaction.id);
    const fork = await compactor.fork(session.id, { at_seq: 6 });
    assert.equal(fork.message_count, 7);
    const patched = await compactor.updateSession(session.id, {
      keep_recent_tokens: 800,
      prepare_ahead_ratio: 0.5,
    });
    assert.equal(patched.keep_recent_tokens, 800);
    assert.equal(patched.prepare_ahead_ratio, 0.5);
    const { changes } = await compactor.settingsChanges(session.id);
    assert.equal(changes.length, 1);
    assert.deepEqual(changes[0].changes.keep_recent_tokens, { before: 1000, after: 800 });
    assert.deepEqual(changes[0].changes.prepare_ahead_ratio, { before: null, after: 0.5 });
    const bundle = await compactor.exportSession(session.id);
    const restored = await compactor.importSession(bundle);
    assert.equal(restored.message_count, 19);
    assert.deepEqual(
      (await compactor.transcript(restored.id, { limit: 100 })).messages,
      (await compactor.transcript(session.id, { limit: 100 })).messages,
    );
    await assert.rejects(compactor.importSession(bundle.slice(0, bundle.length - 10)), {
      status: 422,
    });
  });
});

describe("errors", () => {
  test("a 422 carries the field to fix", async () => {
    await assert.rejects(
      compactor.estimate({ messages: [{ role: "user", content: "hi" }], context_window: -1 }),
      (error) => {
        assert.equal(error.status, 422);
        assert.equal(error.body.errors[0].field, "context_window");
        return true;
      },
    );
  });

  test("a compaction as a job: 202, then polled to its record", async () => {
    const session = await compactor.createSession({ format: "openai", keep_recent_tokens: 500 });
    await compactor.appendMessages(session.id, { messages: turns(6) });
    const job = await compactor.startCompaction(session.id, { instructions: "files" });
    assert.ok(["queued", "running", "done"].includes(job.state));
    const seen = [];
    const done = await compactor.waitForJob(job, {
      pollIntervalMs: 20,
      onProgress: (j) => seen.push(j.state),
    });
    assert.equal(done.state, "done");
    assert.equal(done.compaction?.instructions, "files");
    assert.equal(done.progress.chunks_done, done.progress.chunks_total);
    const { compactions } = await compactor.compactions(session.id);
    assert.deepEqual(
      compactions.map((c) => c.id),
      [done.compaction?.id],
    );
    const again = await compactor.compactionJob(session.id, job.id);
    assert.equal(again.state, "done");
  });

  test("a job with nothing to compact fails with the 409 problem", async () => {
    const session = await compactor.createSession({ format: "openai" });
    const job = await compactor.startCompaction(session.id);
    await assert.rejects(compactor.waitForJob(job, { pollIntervalMs: 20 }), {
      status: 409,
      title: "Nothing to compact",
    });
    await assert.rejects(compactor.compactionJob(session.id, "no-such-job"), { status: 404 });
  });

  test("nothing to compact is a 409", async () => {
    const session = await compactor.createSession({ format: "openai" });
    await compactor.appendMessages(session.id, { messages: [{ role: "user", content: "one" }] });
    await assert.rejects(compactor.compactSession(session.id, { reason: "overflow" }), {
      status: 409,
      title: "Nothing to compact",
    });
  });

  test("no answer is status 0", async () => {
    const nobody = new CompactorClient("http://127.0.0.1:9", { timeoutMs: 5000 });
    await assert.rejects(nobody.healthz(), { status: 0, type: TRANSPORT_ERROR });
  });

  test("a non-JSON error page and a malformed answer", async () => {
    const page = new CompactorClient("http://compactor.invalid", {
      fetch: async () => new Response("<html>Bad gateway from nginx</html>", { status: 502 }),
    });
    await assert.rejects(page.healthz(), (error) => {
      assert.equal(error.status, 502);
      assert.match(error.detail, /Bad gateway from nginx/);
      assert.deepEqual(error.body, {});
      return true;
    });
    const list = new CompactorClient("http://compactor.invalid", {
      fetch: async () => Response.json([1, 2, 3]),
    });
    await assert.rejects(list.healthz(), { status: 200, type: UNEXPECTED_RESPONSE });
  });
});

test("every operation has a method on the client", () => {
  for (const [operation, method] of Object.entries(OPERATION_METHODS)) {
    assert.equal(typeof CompactorClient.prototype[method], "function", operation);
  }
});
