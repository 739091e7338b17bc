// Headless browser drivers for the suite, using the system binaries (apt: chromium,
// firefox-esr): Chromium through playwright-core, Firefox through puppeteer-core over WebDriver
// BiDi. Each launch gets a fresh profile directory and HOME/TMPDIR under the run's scratch folder.
import { existsSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';

export const CHROMIUM_PATHS = ['/usr/bin/chromium', '/usr/lib/chromium/chromium', '/usr/bin/chromium-browser'];
export const FIREFOX_PATHS = ['/usr/lib/firefox-esr/firefox-esr', '/usr/bin/firefox-esr', '/usr/bin/firefox'];
export const findBinary = (paths) => paths.find((p) => existsSync(p)) ?? null;

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-gpu',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/** Waits for the page's `window.__adjoint` and returns it (page.html sets it when done). */
async function waitForResult(evaluate, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await evaluate();
    if (r !== undefined && r !== null) return r;
    if (Date.now() > deadline) throw new Error(`no result after ${timeoutMs / 1000} s`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** Opens each of `urls` in turn in one Chromium; returns { version, values } (each page's result). */
export async function runChromium(urls, scratch, { timeoutMs = 180_000 } = {}) {
  const { chromium } = await import('playwright-core');
  const executablePath = findBinary(CHROMIUM_PATHS);
  if (executablePath === null)
    throw new Error(`chromium not found (looked at ${CHROMIUM_PATHS.join(', ')}); run scripts/install-runtimes.sh`);
  const profile = mkdtempSync(join(scratch, 'chromium-profile-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: CHROMIUM_ARGS,
    env: scratchEnv(scratch),
    timeout: 60_000,
  });
  const logs = [];
  try {
    const values = [];
    for (const url of urls) {
      const page = await context.newPage();
      page.on('console', (m) => logs.push(`[console.${m.type()}] ${m.text()}`));
      page.on('pageerror', (e) => logs.push(`[pageerror] ${e.message}`));
      await page.goto(url);
      values.push(await waitForResult(() => page.evaluate(() => window.__adjoint), timeoutMs));
      await page.close();
    }
    // The user agent says 156.0.0.0 (reduced UA); the DevTools protocol has the full version.
    const page = context.pages()[0] ?? (await context.newPage());
    const { product } = await (await context.newCDPSession(page)).send('Browser.getVersion');
    return { version: `chromium ${product.replace(/^[^/]*\//, '')}`, values, logs };
  } catch (e) {
    e.message += logs.length ? `\n${logs.join('\n')}` : '';
    throw e;
  } finally {
    await context.close();
  }
}

/** Opens each of `urls` in turn in one Firefox (WebDriver BiDi); `prefs` are extra about:config settings. */
export async function runFirefox(urls, scratch, { prefs = {}, timeoutMs = 180_000 } = {}) {
  const { default: puppeteer } = await import('puppeteer-core');
  const executablePath = findBinary(FIREFOX_PATHS);
  if (executablePath === null)
    throw new Error(`firefox not found (looked at ${FIREFOX_PATHS.join(', ')}); run scripts/install-runtimes.sh`);
  const userDataDir = mkdtempSync(join(scratch, 'firefox-profile-'));
  const browser = await puppeteer.launch({
    browser: 'firefox',
    protocol: 'webDriverBiDi',
    executablePath,
    headless: true,
    userDataDir,
    env: scratchEnv(scratch),
    timeout: 60_000,
    extraPrefsFirefox: {
      // No background traffic: only loopback exists, and none of it is needed.
      'app.update.enabled': false,
      'browser.safebrowsing.malware.enabled': false,
      'browser.safebrowsing.phishing.enabled': false,
      'network.captive-portal-service.enabled': false,
      'network.connectivity-service.enabled': false,
      'datareporting.policy.dataSubmissionEnabled': false,
      'toolkit.telemetry.enabled': false,
      'extensions.update.enabled': false,
      ...prefs,
    },
  });
  const logs = [];
  try {
    const values = [];
    for (const url of urls) {
      const page = await browser.newPage();
      page.on('console', (m) => logs.push(`[console.${m.type()}] ${m.text()}`));
      page.on('pageerror', (e) => logs.push(`[pageerror] ${e.message}`));
      await page.goto(url);
      values.push(await waitForResult(() => page.evaluate(() => window.__adjoint), timeoutMs));
      await page.close();
    }
    const version = (await browser.version()).replace(/^firefox\//i, 'firefox ');
    return { version, values, logs };
  } catch (e) {
    e.message += logs.length ? `\n${logs.join('\n')}` : '';
    throw e;
  } finally {
    await browser.close();
  }
}

/** The environment for a child that writes caches and profiles: HOME and TMPDIR in scratch. */
export function scratchEnv(scratch) {
  return {
    ...process.env,
    HOME: scratch,
    TMPDIR: scratch,
    XDG_CONFIG_HOME: join(scratch, '.config'),
    XDG_CACHE_HOME: join(scratch, '.cache'),
    XDG_DATA_HOME: join(scratch, '.local/share'),
    XDG_RUNTIME_DIR: scratch,
  };
}
