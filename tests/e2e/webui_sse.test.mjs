// The browser UI's SSE reader (src/server/webui/sse.js) in Node, which has the same web streams: the
// events come out whole and in order however the bytes are split into reads, with CRLF line ends,
// comments (": ping"), multi-line data, a split UTF-8 character, and a last event without a blank line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readSse } from '../../src/server/webui/sse.js';

function bodyOf(chunks) {
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });
}

async function collect(chunks) {
  const out = [];
  for await (const data of readSse(bodyOf(chunks))) out.push(data);
  return out;
}

const wire = ': ping\n\ndata: {"a":1}\n\nevent: x\ndata: line one\ndata: line two\n\n' +
             'data:no space\r\n\r\ndata: h\u00e9llo \u2603\n\ndata: [DONE]';
const expected = ['{"a":1}', 'line one\nline two', 'no space', 'h\u00e9llo \u2603', '[DONE]'];

test('whole events in order, from one read', async () => {
  assert.deepEqual(await collect([new TextEncoder().encode(wire)]), expected);
});

test('the same events at every split of the bytes into two reads', async () => {
  const bytes = new TextEncoder().encode(wire);
  for (let cut = 1; cut < bytes.length; cut++) {
    assert.deepEqual(await collect([bytes.slice(0, cut), bytes.slice(cut)]), expected, `cut at ${cut}`);
  }
});

test('one byte per read', async () => {
  const bytes = new TextEncoder().encode(wire);
  assert.deepEqual(await collect([...bytes].map((b) => new Uint8Array([b]))), expected);
});

test('stopping early cancels the body', async () => {
  let cancelled = false;
  const body = new ReadableStream({
    pull(controller) {
      controller.enqueue(new TextEncoder().encode('data: more\n\n'));
    },
    cancel() {
      cancelled = true;
    },
  });
  for await (const data of readSse(body)) {
    assert.equal(data, 'more');
    break;
  }
  assert.equal(cancelled, true);
});
