// Image generation run by the gateway (issue 16, docs/tools.md): the model (the
// emulator, driven by "CALL sb__image_generation {...}") asks for an image; the
// worker calls the deployment's image route (OpenAI's Images API, or a Gemini
// image model) and shows OpenAI's image_generation_call item, with partial
// images while streaming, for every upstream kind; an edit refers to the
// chain's newest image, across frontends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cfg, client, sse, unique, upstreamRequests } from './harness.mjs';

const oai = client();
const MODELS = { 'openai-chat': 'emu-chat', 'openai-responses': 'emu-responses', anthropic: 'emu-claude', gemini: 'emu-gemini' };
const IMG = { type: 'image_generation' };
const call = (args) => `CALL sb__image_generation ${JSON.stringify(args)}`;
const isPng = (b64) => Buffer.from(b64, 'base64').subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));

for (const [kind, model] of Object.entries(MODELS)) {
  test(`image generation ← ${kind}: the gateway calls the image route; the item holds the PNG; streamed with partial images`, async () => {
    const m = unique('img');
    const body = { model, store: false, input: `${call({ prompt: `a red square ${m}` })}\n${m}`, tools: [IMG] };
    const res = await oai.responses.create(body);
    assert.deepEqual(res.output.map((i) => i.type), ['image_generation_call', 'message']);
    const [ig] = res.output;
    assert.match(ig.id, /^ig_/);
    assert.equal(ig.status, 'completed');
    assert.ok(isPng(ig.result), 'a PNG');
    assert.match(res.output_text, /The image was generated and shown to the user/);
    assert.equal(JSON.stringify(res).includes('sb_output'), false);
    const up = (await upstreamRequests()).filter((r) => r.path?.endsWith('/images/generations') && JSON.stringify(r.body).includes(m));
    assert.equal(up.length, 1);
    assert.equal(up[0].body.model, 'gpt-image-1');

    const r = await sse('/v1/responses', { body: { ...body, stream: true, tools: [{ ...IMG, partial_images: 2 }] } });
    assert.equal(r.status, 200, r.raw);
    const names = r.events.map((e) => e.event);
    const order = ['response.output_item.added', 'response.image_generation_call.in_progress',
      'response.image_generation_call.generating', 'response.image_generation_call.partial_image',
      'response.image_generation_call.completed', 'response.output_item.done'];
    let at = -1;
    for (const w of order) {
      const k = names.indexOf(w, at + 1);
      assert.ok(k > at, `${w}: ${names.join(',')}`);
      at = k;
    }
    const partials = r.events.filter((e) => e.event === 'response.image_generation_call.partial_image');
    assert.equal(partials.length, 2);
    assert.deepEqual(partials.map((p) => p.data.partial_image_index), [0, 1]);
    partials.forEach((p) => assert.ok(isPng(p.data.partial_image_b64)));
    const done = r.events.find((e) => e.event === 'response.output_item.done' && e.data.item.type === 'image_generation_call');
    assert.ok(isPng(done.data.item.result));
    assert.notEqual(partials[1].data.partial_image_b64, done.data.item.result);
  });
}

test('image generation: an edit of the chain\'s image, on another frontend, goes to the edits endpoint with that image', async () => {
  const m = unique('edit');
  const first = await oai.responses.create({ model: 'emu-chat', tools: [IMG], input: `${call({ prompt: `a cat ${m}` })}\n${m}` });
  const original = first.output[0].result;
  assert.ok(isPng(original));
  const other = client(cfg.frontendB);
  const second = await other.responses.create({ model: 'emu-chat', tools: [IMG], previous_response_id: first.id,
    input: `${call({ prompt: `make it blue ${m}`, edit: true })}\n${m} again` });
  const edited = second.output.find((i) => i.type === 'image_generation_call');
  assert.equal(edited.status, 'completed');
  assert.ok(isPng(edited.result));
  assert.notEqual(edited.result, original);
  const edits = (await upstreamRequests()).filter((r) => r.path?.endsWith('/images/edits'));
  assert.ok(edits.length >= 1, 'the edit went to /images/edits');
});

test('image generation: a Gemini image route (the tool names the model)', async () => {
  const m = unique('gimg');
  const res = await oai.responses.create({ model: 'emu-chat', store: false, tools: [{ ...IMG, model: 'emu-gemini-image' }],
    input: `${call({ prompt: `a tree ${m}` })}\n${m}` });
  const ig = res.output[0];
  assert.equal(ig.type, 'image_generation_call');
  assert.equal(ig.status, 'completed');
  assert.ok(isPng(ig.result));
  const up = (await upstreamRequests()).filter((r) => r.path?.includes(':generateContent') && JSON.stringify(r.body).includes(m));
  assert.equal(up.length, 1);
  assert.deepEqual(up[0].body.generationConfig.responseModalities, ['TEXT', 'IMAGE']);
});

test('image generation: an unknown image model fails the call, not the response', async () => {
  const res = await oai.responses.create({ model: 'emu-chat', store: false, tools: [{ ...IMG, model: 'no-such-image-model' }],
    input: `${call({ prompt: 'x' })}\n${unique('noimg')}` });
  assert.equal(res.status, 'completed');
  assert.equal(res.output[0].type, 'image_generation_call');
  assert.equal(res.output[0].status, 'failed');
  assert.match(res.output_text, /no image model is configured/);
});
