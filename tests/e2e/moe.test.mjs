// A qwen35moe (hybrid trunk, routed experts and a shared expert; docs/moe.md) served for real: four
// clients at once, whose rows share every step and are grouped by expert across sequences, each get
// exactly the reply a one-lane server without a prompt cache gives them alone; a repeated request is
// served from the cache and is still the same reply.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { makeTinyModel, postJson, startServer } from './harness.mjs';

let model;
before(async () => {
  model = await makeTinyModel({ arch: 'qwen35moe', tokenizer: 'qwen35', layers: 4, embd: 64, heads: 4, ff: 128,
                                ctx: 4096, extra: ['--head-dim', '16', '--ssm-state', '16', '--ssm-heads', '4',
                                                   '--experts', '8', '--experts-used', '2', '--expert-ff', '32'] });
});
after(() => model?.remove());

const words = 'amber basalt cinder dune ember flint granite hearth iron jasper kiln lava'.split(' ');
const prompt = (seed) => Array.from({ length: 120 }, (_, i) => words[(i * 5 + seed * 11) % words.length]).join(' ');

async function ask(url, seed) {
  const r = await postJson(`${url}/v1/chat/completions`, {
    model: 'm', messages: [{ role: 'user', content: prompt(seed) }], max_tokens: 12, temperature: 0 });
  assert.equal(r.status, 200, r.text);
  return { text: r.json.choices[0].message.content, cached: r.json.usage.prompt_tokens_details.cached_tokens };
}

test('batched MoE replies equal solo uncached replies, and a cached repeat is unchanged', async () => {
  const batched = await startServer(['--parallel', '4'], { model: model.path });
  const solo = await startServer(['--parallel', '1', '--prompt-cache-bytes', '0', '--no-ssd-cache'], { model: model.path });
  try {
    const seeds = [1, 2, 3, 4];
    const together = await Promise.all(seeds.map((s) => ask(batched.url, s)));
    for (const [i, s] of seeds.entries()) {
      const alone = await ask(solo.url, s);
      assert.equal(together[i].text, alone.text, `client ${s}: the batched reply differs from the solo one`);
      assert.ok(alone.text.length > 0);
    }
    const again = await ask(batched.url, 2);
    assert.ok(again.cached > 0, 'the repeat was not served from the prompt cache');
    assert.equal(again.text, together[1].text);
  } finally {
    await batched.stop();
    await solo.stop();
  }
});
