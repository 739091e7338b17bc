// The Shakespeare page's checks for test/demo/run.mjs (which passes its helpers in `t`): the tab
// from the digits page, the published GPT training until the training loss (#loss, smoothed over
// ~10 steps) is below 2.5, the live sample, 200 characters generated from a prompt, weights that
// download and load back (the same prompt and seed then generate the same text), and the phone
// layout. Budget: training to 2.5 takes 150–250 steps, a minute or two on two loaded cores.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const TRAIN_TIMEOUT_MS = 420_000;
const TARGET_LOSS = 2.5;

const text = async (page, sel) => (await page.locator(sel).textContent()) ?? '';
const number = async (page, sel) => Number((await text(page, sel)).replace(/,/g, ''));

async function waitReady(page) {
  await page.waitForFunction(() => !document.querySelector('#train').disabled, null, { timeout: 120_000 });
}

/** Generates from #prompt with #seed and returns the continuation (without the prompt). */
async function generate(page, seed) {
  await page.fill('#seed', String(seed));
  await page.evaluate(() => {
    delete document.querySelector('#generated').dataset.step;
  });
  await page.click('#generate');
  await page.waitForFunction(() => document.querySelector('#generated').dataset.step !== undefined, null, { timeout: 60_000 });
  const prompt = await page.locator('#generated b').textContent();
  const all = await page.locator('#generated').textContent();
  if (!all.startsWith(prompt)) throw new Error(`#generated does not start with the prompt ${JSON.stringify(prompt)}`);
  return all.slice(prompt.length);
}

/** The header and tensor shapes of a safetensors file. */
function safetensorsHeader(file) {
  const bytes = readFileSync(file);
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8'));
  return { bytes: bytes.length, header };
}

export async function shakespeare(browser, url, t) {
  const { check, log } = t;
  const context = await browser.newContext({ viewport: { width: 1360, height: 1000 }, deviceScaleFactor: 1, acceptDownloads: true });
  const page = await context.newPage();
  t.watch(page, 'shakespeare');
  const ok = await check('shakespeare: the tab opens the page and its worker starts', async () => {
    await page.goto(url);
    // The digits page's worker up first: leaving while its script loads aborts that request.
    await waitReady(page);
    await page.click('nav.tabs a[href="shakespeare.html"]');
    await page.waitForURL(/shakespeare\.html$/);
    await waitReady(page);
    await page.waitForFunction(() => document.querySelector('#val-loss').textContent !== '–', null, { timeout: 60_000 });
    const isolated = await page.evaluate(() => self.crossOriginIsolated);
    if (!isolated) throw new Error('the page is not cross-origin isolated (COOP/COEP headers missing?)');
    const info = await text(page, '#model-info');
    if (!/4 layers · 4 heads · width 128 · context 64 · batch 12/.test(info)) throw new Error(`not the published model: ${info}`);
    return `${info}; untrained val loss ${await text(page, '#val-loss')}`;
  });
  if (!ok) {
    await context.close();
    return;
  }
  await check(`shakespeare: the training loss falls below ${TARGET_LOSS}`, async () => {
    const t0 = Date.now();
    await page.click('#train');
    await page.waitForFunction((target) => Number.parseFloat(document.querySelector('#loss').textContent) < target, TARGET_LOSS, {
      timeout: TRAIN_TIMEOUT_MS,
      polling: 250,
    });
    const s = (Date.now() - t0) / 1000;
    return `loss ${await text(page, '#loss')} at step ${await text(page, '#step')} after ${s.toFixed(1)} s, ${await text(page, '#tokens-per-second')} tokens/s; val loss ${await text(page, '#val-loss')}`;
  });
  await check('shakespeare: the live sample refreshes as it learns', async () => {
    await page.waitForFunction(() => /step [1-9]/.test(document.querySelector('#sample-step').textContent), null, { timeout: 60_000 });
    const sample = await page.locator('#sample').textContent();
    if (sample.length < 150) throw new Error(`#sample has ${sample.length} characters: ${JSON.stringify(sample)}`);
    return `${await text(page, '#sample-step')}: ${JSON.stringify(sample.slice(0, 60))}…`;
  });
  await check('shakespeare: #pause stops training', async () => {
    await page.click('#pause');
    await page.waitForFunction(() => !document.querySelector('#train').disabled);
    const before = await text(page, '#step');
    await page.waitForTimeout(800);
    const after = await text(page, '#step');
    if (before !== after) throw new Error(`step moved from ${before} to ${after} after pausing`);
    return `paused at step ${after}`;
  });
  const gen = {};
  await check('shakespeare: 200 characters are generated from a prompt', async () => {
    await page.fill('#prompt', 'ROMEO:\n');
    const t0 = Date.now();
    gen.text = await generate(page, 7);
    const chars = [...gen.text].length;
    if (chars !== 200) throw new Error(`${chars} characters generated, expected 200: ${JSON.stringify(gen.text)}`);
    // A model below 2.5 has learnt spaces and lower-case letters.
    const letters = (gen.text.match(/[a-z ]/g) ?? []).length;
    if (letters < 100) throw new Error(`only ${letters} of 200 are lower-case letters or spaces: ${JSON.stringify(gen.text)}`);
    gen.step = await number(page, '#step');
    return `in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${JSON.stringify(gen.text.slice(0, 80))}…`;
  });
  await check('shakespeare: a prompt outside the vocabulary is refused in the page', async () => {
    await page.fill('#prompt', 'Ω');
    await page.click('#generate');
    await page.waitForFunction(() => !document.querySelector('#message').hidden, null, { timeout: 30_000 });
    const msg = await text(page, '#message');
    if (!/generate/i.test(msg) || !msg.includes('Ω')) throw new Error(`message: ${msg}`);
    await page.waitForFunction(() => !document.querySelector('#generate').disabled);
    await page.fill('#prompt', 'ROMEO:\n');
    return msg.replace(/\s+/g, ' ');
  });
  await check('shakespeare: the weights download and load back', async () => {
    if (gen.text === undefined) throw new Error('nothing was generated to compare with');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#save')]);
    const name = download.suggestedFilename();
    const file = join(t.scratch, name);
    await download.saveAs(file);
    const { bytes, header } = safetensorsHeader(file);
    const meta = header.__metadata__ ?? {};
    if (!/\.safetensors$/.test(name)) throw new Error(`file name ${name}`);
    if (header['tokEmb.weight']?.shape.join('×') !== '65×128' || header['blocks.3.mlp.2.weight']?.shape.join('×') !== '128×512')
      throw new Error(`unexpected tensors: ${Object.keys(header).slice(0, 8).join(' ')}`);
    if (JSON.parse(meta.config ?? '{}').layers !== 4 || JSON.parse(meta.vocab ?? '[]').length !== 65)
      throw new Error(`metadata: ${JSON.stringify(meta).slice(0, 200)}`);
    // A fresh model writes something else from the same seed; the loaded one writes the same again.
    await page.click('#reset');
    await page.waitForFunction(() => document.querySelector('#step').textContent === '0');
    const fresh = await generate(page, 7);
    if (fresh === gen.text) throw new Error('a fresh model generated the same text as the trained one');
    await page.setInputFiles('#load', file);
    await page.waitForFunction(() => /Loaded/.test(document.querySelector('#status').textContent), null, { timeout: 30_000 });
    const step = await number(page, '#step');
    if (step !== gen.step) throw new Error(`#step is ${step} after loading, it was ${gen.step} when saved`);
    const again = await generate(page, 7);
    if (again !== gen.text)
      throw new Error(`the loaded model generated ${JSON.stringify(again.slice(0, 60))}…, not ${JSON.stringify(gen.text.slice(0, 60))}…`);
    return `${name}, ${bytes.toLocaleString('en-US')} bytes; same 200 characters from the same seed after loading`;
  });
  await page.mouse.move(0, 0);
  await page.screenshot({ path: join(t.artifacts, 'demo-shakespeare.png'), fullPage: true });
  log('        screenshot: test/artifacts/demo-shakespeare.png');
  await context.close();

  const phone = await browser.newContext({ viewport: { width: 375, height: 812 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  const small = await phone.newPage();
  t.watch(small, 'shakespeare phone');
  await check('shakespeare phone: nothing overflows at 375 px', async () => {
    await small.goto(new URL('shakespeare.html', url).href);
    await waitReady(small);
    await small.waitForFunction(() => document.querySelector('#sample-step').textContent !== '');
    await t.noOverflow(small);
  });
  await small.screenshot({ path: join(t.artifacts, 'demo-shakespeare-phone.png'), fullPage: true });
  log('        screenshot: test/artifacts/demo-shakespeare-phone.png');
  await phone.close();
}
