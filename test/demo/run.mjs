// `npm run test:demo`: the browser demo in a real Chromium (playwright-core driving Debian's
// /usr/bin/chromium, or $CHROMIUM). Builds build/demo/, serves it on a free loopback port, then
//   desktop (1360×1000): trains from #train until #accuracy shows ≥ 90 %, pauses, draws digits
//     on #draw with the mouse and reads #prediction, downloads the weights, resets, tries the
//     feedback-alignment toggle, and trains the CNN;
//   phone (375×812, touch): refuses a malformed weights file, loads the downloaded weights,
//     draws with touch events, and checks that nothing overflows the viewport;
//   Shakespeare (shakespeare.js, desktop): the tab opens the page, the published GPT trains until
//     the training loss is below 2.5, the live sample refreshes, 200 characters are generated
//     from a prompt, the weights download and load back (the same seed then generates the same
//     text); at 375×812 nothing overflows;
// and fails on any console error, page error or failed request. Screenshots go to
// test/artifacts/demo-desktop.png, demo-phone.png, demo-shakespeare.png and
// demo-shakespeare-phone.png. Prints one line per check and "demo test: N passed, N failed";
// exits 1 when a check failed. Options: --headed, --slow, --epochs N (train on to epoch N after
// reaching 90 %, for a screenshot of a longer run), --only digits|shakespeare.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { buildDemo, serveDemo } from '../../scripts/serve-demo.mjs';
import { shakespeare } from './shakespeare.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ARTIFACTS = join(ROOT, 'test/artifacts');
const CHROMIUM = process.env.CHROMIUM ?? ['/usr/bin/chromium', '/usr/lib/chromium/chromium'].find(existsSync);
const TRAIN_TIMEOUT_MS = 180_000;
const argv = process.argv.slice(2);
const EPOCHS = Number(argv[argv.indexOf('--epochs') + 1] ?? 0) || 0;
const ONLY = argv.includes('--only') ? argv[argv.indexOf('--only') + 1] : null;

const results = [];
const problems = []; // console errors, page errors, failed requests: all pages, whole run
const log = (s) => process.stdout.write(`${s}\n`);

/** Runs one named check; a throw fails it (with the message) and the run goes on. */
async function check(name, fn) {
  const t0 = Date.now();
  try {
    const detail = await fn();
    results.push({ name, ok: true });
    log(`  ok    ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)${detail ? ` — ${detail}` : ''}`);
    return true;
  } catch (e) {
    results.push({ name, ok: false });
    log(
      `  FAIL  ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)\n${String(e?.message ?? e)
        .split('\n')
        .slice(0, 8)
        .map((l) => `        ${l}`)
        .join('\n')}`,
    );
    return false;
  }
}

function watch(page, label) {
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`${label} console.error: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`${label} page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`${label} request failed: ${r.url()} (${r.failure()?.errorText})`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`${label} HTTP ${r.status()}: ${r.url()}`);
  });
  page.on('crash', () => problems.push(`${label} page crashed`));
}

const text = (page, sel) => page.locator(sel).innerText();
const percent = async (page) => Number.parseFloat(await text(page, '#accuracy'));

/** Pad-relative points (0..1) → page coordinates of #draw. */
async function padPoints(page, points) {
  const box = await page.locator('#draw').boundingBox();
  return points.map(([x, y]) => ({ x: box.x + x * box.width, y: box.y + y * box.height }));
}

/** Strokes drawn with the mouse (a list of polylines in pad coordinates). */
async function drawMouse(page, strokes) {
  for (const stroke of strokes) {
    const pts = await padPoints(page, stroke);
    await page.mouse.move(pts[0].x, pts[0].y);
    await page.mouse.down();
    for (const p of pts.slice(1)) await page.mouse.move(p.x, p.y, { steps: 4 });
    await page.mouse.up();
  }
}

/** Strokes drawn with touch events (Chrome DevTools Protocol), as a finger would. */
async function drawTouch(page, cdp, strokes) {
  for (const stroke of strokes) {
    const pts = await padPoints(page, stroke);
    await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [pts[0]] });
    for (const p of pts.slice(1)) await cdp.send('Input.dispatchTouchEvent', { type: 'touchMove', touchPoints: [p] });
    await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
  }
}

const ellipse = (cx, cy, rx, ry, n = 28) =>
  Array.from({ length: n + 1 }, (_, i) => [cx + rx * Math.sin((2 * Math.PI * i) / n), cy - ry * Math.cos((2 * Math.PI * i) / n)]);
/** A few digits as a person might draw them, in pad coordinates. */
const DIGITS = {
  0: [ellipse(0.5, 0.5, 0.2, 0.32)],
  1: [
    [
      [0.5, 0.18],
      [0.5, 0.82],
    ],
  ],
  7: [
    [
      [0.3, 0.22],
      [0.7, 0.22],
      [0.58, 0.45],
      [0.45, 0.82],
    ],
  ],
  3: [
    [
      [0.32, 0.25],
      [0.45, 0.18],
      [0.6, 0.2],
      [0.66, 0.3],
      [0.6, 0.42],
      [0.47, 0.48],
      [0.62, 0.55],
      [0.68, 0.68],
      [0.6, 0.8],
      [0.45, 0.83],
      [0.32, 0.76],
    ],
  ],
};

/** Clears the pad, draws `digit`, and returns the prediction once #prediction shows a digit. */
async function drawAndRead(page, digit, draw) {
  await page.click('#clear');
  await page.waitForFunction(() => document.querySelector('#prediction').textContent === '?');
  await draw(DIGITS[digit]);
  await page.waitForFunction(() => /^[0-9]$/.test(document.querySelector('#prediction').textContent ?? ''), null, { timeout: 10_000 });
  return Number(await text(page, '#prediction'));
}

async function waitReady(page) {
  await page.waitForFunction(() => !document.querySelector('#train').disabled, null, { timeout: 60_000 });
}

async function desktop(browser, url, shared) {
  const context = await browser.newContext({ viewport: { width: 1360, height: 1000 }, deviceScaleFactor: 1, acceptDownloads: true });
  const page = await context.newPage();
  watch(page, 'desktop');
  await check('page loads and the worker starts', async () => {
    await page.goto(url);
    await waitReady(page);
    for (const id of ['#train', '#pause', '#reset', '#accuracy', '#loss-plot', '#draw', '#prediction']) {
      if ((await page.locator(id).count()) !== 1) throw new Error(`no ${id} element`);
    }
    return `untrained test accuracy ${await text(page, '#accuracy')}`;
  });
  const trained = await check('#train reaches ≥ 90 % test accuracy', async () => {
    const t0 = Date.now();
    await page.click('#train');
    await page.waitForFunction(() => Number.parseFloat(document.querySelector('#accuracy').textContent) >= 90, null, {
      timeout: TRAIN_TIMEOUT_MS,
      polling: 200,
    });
    const reached = `${await text(page, '#accuracy')} after ${((Date.now() - t0) / 1000).toFixed(1)} s`;
    if (EPOCHS > 0) {
      await page.waitForFunction((n) => Number.parseFloat(document.querySelector('#epoch').textContent) >= n, EPOCHS, {
        timeout: TRAIN_TIMEOUT_MS,
        polling: 200,
      });
      return `${reached}; ${await text(page, '#accuracy')} at epoch ${await text(page, '#epoch')}, step ${await text(page, '#step')}, ${await text(page, '#steps-per-second')} steps/s`;
    }
    return `${await text(page, '#accuracy')} after ${((Date.now() - t0) / 1000).toFixed(1)} s, step ${await text(page, '#step')}, ${await text(page, '#steps-per-second')} steps/s`;
  });
  await check('the plot and the digit grid are live', async () => {
    // The plot canvas has ink in several colours; the grid has captions with predicted digits.
    const colours = await page.evaluate(() => {
      const c = document.querySelector('#loss-plot');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      const seen = new Set();
      for (let i = 0; i < d.length; i += 4 * 7) if (d[i + 3] > 200) seen.add(`${d[i] >> 4},${d[i + 1] >> 4},${d[i + 2] >> 4}`);
      return seen.size;
    });
    if (colours < 6) throw new Error(`#loss-plot has ${colours} colours: nothing plotted?`);
    const captions = await page.locator('#grid figcaption b').allInnerTexts();
    if (captions.length < 20 || !captions.every((c) => /^[0-9]$/.test(c)))
      throw new Error(`grid captions: ${captions.slice(0, 12).join(' ')}`);
    return `${colours} plot colours, ${captions.length} tiles; ${await text(page, '#grid-summary')}`;
  });
  await check('#pause stops training', async () => {
    await page.click('#pause');
    await page.waitForFunction(() => document.querySelector('#pause').disabled && !document.querySelector('#train').disabled);
    const before = await text(page, '#step');
    await page.waitForTimeout(700);
    const after = await text(page, '#step');
    if (before !== after) throw new Error(`step moved from ${before} to ${after} after pausing`);
    return `paused at step ${after}, ${await text(page, '#accuracy')}`;
  });
  await check('drawing on #draw (mouse) shows a predicted digit', async () => {
    const read = {};
    for (const d of [0, 1, 7, 3]) read[d] = await drawAndRead(page, d, (s) => drawMouse(page, s));
    const probs = await page.locator('#probabilities .pct').allInnerTexts();
    const total = probs.reduce((a, p) => a + Number.parseFloat(p), 0);
    if (probs.length !== 10 || !(total > 97 && total < 103)) throw new Error(`probabilities do not add up: ${probs.join(' ')}`);
    const pairs = Object.entries(read)
      .map(([d, p]) => `${d}→${p}`)
      .join(' ');
    const right = Object.entries(read).filter(([d, p]) => Number(d) === p).length;
    // A model at ≥ 90 % reads clean drawings; fewer than half right means the 8×8 reduction is off.
    if (trained && right < 2)
      throw new Error(`only ${right} of 4 drawn digits read right (${pairs}): is the drawing's 8×8 reduction broken?`);
    return `drawn→read ${pairs} (${right}/4 right)`;
  });
  await check('weights download as .safetensors', async () => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#save')]);
    const file = join(shared.scratch, download.suggestedFilename());
    await download.saveAs(file);
    const bytes = readFileSync(file);
    const n = Number(bytes.readBigUInt64LE(0));
    const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8'));
    const shapes = Object.fromEntries(
      Object.entries(header)
        .filter(([k]) => k !== '__metadata__')
        .map(([k, v]) => [k, v.shape.join('×')]),
    );
    if (shapes['0.weight'] !== '512×64' || shapes['3.weight'] !== '10×512')
      throw new Error(`unexpected tensors: ${JSON.stringify(shapes)}`);
    if (!download.suggestedFilename().endsWith('.safetensors')) throw new Error(`file name ${download.suggestedFilename()}`);
    shared.weights = file;
    shared.savedAccuracy = await percent(page);
    return `${download.suggestedFilename()}, ${bytes.length.toLocaleString('en-US')} bytes, ${Object.keys(shapes).join(' ')}`;
  });
  await page.click('#clear');
  await drawMouse(page, DIGITS[3]);
  await page.waitForFunction(() => /^[0-9]$/.test(document.querySelector('#prediction').textContent ?? ''));
  await page.mouse.move(0, 0);
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(ARTIFACTS, 'demo-desktop.png'), fullPage: true });
  log('        screenshot: test/artifacts/demo-desktop.png');
  await check('#reset starts a fresh model', async () => {
    await page.click('#reset');
    await page.waitForFunction(
      () => document.querySelector('#step').textContent === '0' && Number.parseFloat(document.querySelector('#accuracy').textContent) < 50,
    );
    return `test accuracy back to ${await text(page, '#accuracy')}`;
  });
  await check('the feedback-alignment toggle trains or explains', async () => {
    await page.click('#feedback');
    const outcome = await page
      .waitForFunction(
        () => {
          const msg = document.querySelector('#message');
          if (!msg.hidden) return `error shown: ${msg.textContent}`;
          return document.querySelector('#model-info').textContent.includes('feedback alignment') ? 'built' : null;
        },
        null,
        { timeout: 15_000 },
      )
      .then((h) => h.jsonValue());
    if (outcome !== 'built') {
      if (!/feedback/i.test(outcome)) throw new Error(`an error that does not say what failed: ${outcome}`);
      if (await page.locator('#feedback').isChecked()) throw new Error('the toggle stays on although the model was not built');
      return outcome;
    }
    await page.click('#train');
    await page.waitForFunction(() => Number(document.querySelector('#step').textContent.replace(/,/g, '')) >= 50, null, {
      timeout: 60_000,
    });
    await page.click('#pause');
    // The worker evaluates, then reports the pause: the stats are final once #train is enabled.
    await page.waitForFunction(() => !document.querySelector('#train').disabled);
    const angle = await text(page, '#angle');
    if (!/^\d+°$/.test(angle)) throw new Error(`the angle to backprop shows ${JSON.stringify(angle)}`);
    const fa = `trains with feedback alignment: ${await text(page, '#accuracy')} at step ${await text(page, '#step')}, signal ${angle} from backprop's`;
    await page.click('#feedback');
    await page.waitForFunction(() => !document.querySelector('#model-info').textContent.includes('feedback alignment'));
    return fa;
  });
  await check('the CNN from the model selector trains to ≥ 90 %', async () => {
    await page.selectOption('#model', 'cnn');
    await page.waitForFunction(() => document.querySelector('#model-info').textContent.includes('Conv2d'));
    const t0 = Date.now();
    await page.click('#train');
    // On a failure, say what the page showed (a stopped run explains itself in #message).
    const state = async () =>
      `step ${await text(page, '#step')}, accuracy ${await text(page, '#accuracy')}, loss ${await text(page, '#loss')}, status ${JSON.stringify(await text(page, '#status'))}, message ${JSON.stringify(await text(page, '#message'))}`;
    await page
      .waitForFunction(() => Number.parseFloat(document.querySelector('#accuracy').textContent) >= 90, null, {
        timeout: TRAIN_TIMEOUT_MS,
        polling: 200,
      })
      .catch(async (e) => {
        throw new Error(`${e.message.split('\n')[0]}; the page shows ${await state()}`);
      });
    const detail = `${await text(page, '#accuracy')} after ${((Date.now() - t0) / 1000).toFixed(1)} s, step ${await text(page, '#step')}, ${await text(page, '#steps-per-second')} steps/s`;
    await page.click('#pause', { timeout: 30_000 }).catch(async (e) => {
      throw new Error(`${e.message.split('\n')[0]}; the page shows ${await state()}`);
    });
    await page.waitForFunction(() => !document.querySelector('#train').disabled);
    return detail;
  });
  await context.close();
}

async function phone(browser, url, shared) {
  const context = await browser.newContext({ viewport: { width: 375, height: 812 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  const page = await context.newPage();
  watch(page, 'phone');
  await check('phone: page loads at 375 px', async () => {
    await page.goto(url);
    await waitReady(page);
  });
  await check('phone: a malformed weights file is refused in the page', async () => {
    const bad = join(shared.scratch, 'not-weights.safetensors');
    writeFileSync(bad, 'this is not a safetensors file');
    await page.setInputFiles('#load', bad);
    await page.waitForFunction(() => !document.querySelector('#message').hidden, null, { timeout: 15_000 });
    const msg = await text(page, '#message');
    if (!/load/i.test(msg) || !/Error/.test(msg)) throw new Error(`message: ${msg}`);
    return msg.replace(/\s+/g, ' ');
  });
  await check('phone: downloaded weights load back', async () => {
    if (!shared.weights) throw new Error('no weights file (the download check failed)');
    await page.setInputFiles('#load', shared.weights);
    await page.waitForFunction(() => /Loaded/.test(document.querySelector('#status').textContent), null, { timeout: 15_000 });
    // The evaluation of the loaded model follows the "loaded" message.
    await page
      .waitForFunction(() => Number.parseFloat(document.querySelector('#accuracy').textContent) >= 90, null, { timeout: 10_000 })
      .catch(async () => {
        throw new Error(`test accuracy after loading is ${await text(page, '#accuracy')}`);
      });
    const acc = await percent(page);
    if (acc !== shared.savedAccuracy) throw new Error(`test accuracy after loading is ${acc}%, it was ${shared.savedAccuracy}% when saved`);
    return `test accuracy ${acc}% after loading, as when saved`;
  });
  await check('phone: drawing with touch shows a predicted digit', async () => {
    const cdp = await context.newCDPSession(page);
    await page.locator('#draw').scrollIntoViewIfNeeded();
    const got = await drawAndRead(page, 7, (s) => drawTouch(page, cdp, s));
    return `drew 7, read ${got}`;
  });
  await check('phone: nothing overflows the viewport', () => noOverflow(page));
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(ARTIFACTS, 'demo-phone.png'), fullPage: true });
  log('        screenshot: test/artifacts/demo-phone.png');
  await context.close();
}

/** Throws when the page or any element is wider than the viewport. */
async function noOverflow(page) {
  const over = await page.evaluate(() => {
    const vw = document.documentElement.clientWidth;
    const wide = [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > vw + 0.5)
      .map((e) => e.id || e.className || e.tagName);
    return { scroll: document.documentElement.scrollWidth, vw, wide: wide.slice(0, 5) };
  });
  if (over.scroll > over.vw || over.wide.length > 0)
    throw new Error(`page is ${over.scroll}px wide in a ${over.vw}px viewport: ${over.wide.join(', ')}`);
}

async function main() {
  if (!CHROMIUM) {
    log('test:demo: no Chromium at /usr/bin/chromium (apt-get install chromium, or set $CHROMIUM)');
    process.exit(2);
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  const scratch = mkdtempSync(join(tmpdir(), 'adjoint-demo-test-'));
  const shared = { scratch, weights: null };
  await buildDemo();
  const server = await serveDemo({ port: 0 });
  log(`demo test: ${server.url} in ${CHROMIUM}`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: !argv.includes('--headed'),
    slowMo: argv.includes('--slow') ? 50 : 0,
    // Playwright gives every launch a fresh temporary profile (user-data-dir).
    args: [
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-gpu',
      '--no-first-run',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  try {
    log(`chromium ${browser.version()}`);
    if (ONLY !== 'shakespeare') {
      await desktop(browser, server.url, shared);
      await phone(browser, server.url, shared);
    }
    if (ONLY !== 'digits') await shakespeare(browser, server.url, { check, watch, noOverflow, log, scratch, artifacts: ARTIFACTS });
    await check('no console error, page error or failed request', async () => {
      if (problems.length > 0) throw new Error(problems.join('\n'));
    });
  } finally {
    await browser.close();
    await server.close();
    rmSync(scratch, { recursive: true, force: true });
  }
  const failed = results.filter((r) => !r.ok).length;
  log(`demo test: ${results.length - failed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
}

main().catch((e) => {
  log(`demo test: could not run: ${e?.stack ?? e}`);
  log(`demo test: ${results.filter((r) => r.ok).length} passed, ${results.filter((r) => !r.ok).length + 1} failed`);
  process.exit(1);
});
