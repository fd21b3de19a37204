// Drives the dashboard and playground in a real browser: Debian's headless Chromium through playwright-core
// (no browser download). Starts `lockstep serve` on a free port, then checks that the page loads with no
// console errors, a chat answer streams in, the dashboard shows >= 2 requests in one step while two streams
// run, and the combined / parallel / sequential panel finishes; then, on a second server whose chat template
// opens a <think> block, that the playground shows the streamed reasoning above the answer. Prints one line per check and a closing
// "N passed, N failed" line; exits non-zero on any failure.
//
//   node browser_test.mjs --binary build/lockstep --model MODEL.gguf [--chromium /usr/bin/chromium]
//                         [--screenshot docs/dashboard.png] [--threads 1] [--split-tokens 8]

import {spawn} from 'node:child_process';
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {chromium} from 'playwright-core';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, i, all) => {
  if (a.startsWith('--')) pairs.push([a.slice(2), all[i + 1]]);
  return pairs;
}, []));
const binary = args.binary;
const model = args.model;
const chromiumPath = args.chromium || '/usr/bin/chromium';
if (!binary || !model) {
  console.error('usage: node browser_test.mjs --binary LOCKSTEP --model MODEL.gguf [--screenshot PNG]');
  process.exit(2);
}

function startServer(extraArgs = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ['serve', '-m', model, '--port', '0', '-t', args.threads || '1', ...extraArgs],
        {stdio: ['ignore', 'pipe', 'pipe']});
    let log = '';
    const timer = setTimeout(() => reject(new Error(`server not ready in 60 s:\n${log}`)), 60000);
    const onData = (d) => {
      log += d;
      const m = /lockstep: serving .* on http:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve({child, port: Number(m[1]), log: () => log});
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`server exited (${code}):\n${log}`)));
  });
}

// One streamed chat request from Node (not the page): keeps a request in the engine while the page watches.
async function streamFromNode(port, content, maxTokens) {
  const response = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({messages: [{role: 'user', content}], max_tokens: maxTokens, ignore_eos: true, stream: true}),
  });
  if (!response.ok) throw new Error(`chat: HTTP ${response.status}`);
  await response.text();
}

const results = [];
async function check(name, fn) {
  const start = Date.now();
  try {
    await fn();
    results.push(true);
    console.log(`ok   ${name} (${((Date.now() - start) / 1000).toFixed(1)} s)`);
  } catch (error) {
    results.push(false);
    console.log(`FAIL ${name}: ${error.message}`);
  }
}

const server = await startServer();
const profile = mkdtempSync(join(tmpdir(), 'lockstep-chromium-'));
let context;
let thinking;  // the second server (a template that opens a <think> block)
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    viewport: {width: 1400, height: 1000},
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = context.pages()[0] ?? await context.newPage();
  const consoleErrors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => consoleErrors.push(e.message));
  const base = `http://127.0.0.1:${server.port}`;

  await check('page loads and the feed goes live', async () => {
    await page.goto(`${base}/`, {waitUntil: 'load'});
    await page.waitForFunction(() => document.querySelector('#feed-status')?.textContent === 'live',
        null, {timeout: 30000});
    const model = await page.textContent('#model');
    if (!model.includes('context')) throw new Error(`model line is '${model}'`);
  });

  await check('a chat answer streams in', async () => {
    // The playground samples (server's default temperature, no seed), so a random-weight model may end its answer
    // with an end-of-text token at once: such an answer ("finish: stop" after one delta) is asked again, up
    // to three times; an answer cut by max_tokens in fewer than two deltas is a failure at once.
    await page.fill('#chat-max-tokens', '40');
    for (let attempt = 1; ; ++attempt) {
      await page.fill('#chat-input', 'Once upon a time');
      await page.click('#chat-form button[type=submit]');
      // Watch the answer grow (the last assistant message is this attempt's).
      const result = await page.evaluate((n) => new Promise((resolve, reject) => {
        const seen = new Set();
        const started = performance.now();
        const poll = () => {
          const answers = document.querySelectorAll('.msg.assistant');
          const answer = answers.length === n ? answers[n - 1] : null;
          if (answer && answer.textContent.length) seen.add(answer.textContent.length);
          if (answer?.dataset.done === 'true') {
            const metas = document.querySelectorAll('.meta');
            return resolve({lengths: [...seen], deltas: Number(answer.dataset.deltas),
                            meta: metas[metas.length - 1].textContent});
          }
          if (performance.now() - started > 60000) return reject(new Error('no finished answer in 60 s'));
          requestAnimationFrame(poll);
        };
        poll();
      }), attempt);
      // Streamed: several deltas arrived (a fast model's may all land in one read, so the lengths seen are
      // informative only).
      if (!/tokens .*finish: /.test(result.meta)) throw new Error(`answer line is '${result.meta}'`);
      if (result.deltas >= 2) {
        console.log(`     ${result.deltas} deltas, ${result.lengths.length} distinct lengths drawn while ` +
                    `streaming (attempt ${attempt})`);
        break;
      }
      if (!/finish: stop/.test(result.meta) || attempt === 3) {
        throw new Error(`the answer came in ${result.deltas} delta(s); lengths seen: ${result.lengths}; ` +
                        `'${result.meta}'`);
      }
    }
  });

  await check('the dashboard shows >= 2 requests in one step while two streams run', async () => {
    const streams = Promise.all([streamFromNode(server.port, 'First story', 64),
      streamFromNode(server.port, 'Second story', 64)]);
    await page.waitForFunction(() => Number(document.querySelector('#timeline').dataset.peakRequests) >= 2,
        null, {timeout: 60000});
    await streams;
    const lanes = await page.$$eval('#timeline svg g rect.decode', (r) => r.length);
    if (lanes < 2) throw new Error('no decode cells drawn');
  });

  await check('the combined / parallel / sequential panel finishes', async () => {
    await page.fill('#split-tokens', args['split-tokens'] || '8');  // the test model's context is 256 tokens
    await page.click('#split-form button[type=submit]');
    await page.waitForFunction(() => ['done', 'error'].includes(document.querySelector('#split-panel').dataset.state),
        null, {timeout: 180000});
    const state = await page.getAttribute('#split-panel', 'data-state');
    const summary = await page.textContent('#split-summary');
    if (state !== 'done') throw new Error(`panel state ${state}: ${summary}`);
    for (const mode of ['combined', 'parallel', 'sequential']) {
      const wall = Number(await page.getAttribute(`#mode-${mode}`, 'data-wall'));
      if (!(wall > 0)) throw new Error(`${mode} has no wall time`);
    }
    if (!/(parallel|combined) [0-9.]+× faster than (combined|parallel)/.test(summary)) {
      throw new Error(`summary is '${summary}'`);
    }
    await page.waitForFunction(() => document.querySelector('#advisor-result')?.dataset.recommended,
        null, {timeout: 10000});
  });

  await check('a thinking model\'s reasoning streams in above its answer', async () => {
    // ChatML whose generation prompt opens a <think> block (as DeepSeek-R1's does): the random model never
    // closes it, so its whole reply comes back as reasoning_content.
    const template = join(profile, 'think.jinja');
    writeFileSync(template, "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n" +
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}");
    thinking = await startServer(['--chat-template', template]);
    await page.goto(`http://127.0.0.1:${thinking.port}/`, {waitUntil: 'load'});
    await page.fill('#chat-max-tokens', '24');
    // As above, a sampled reply may end at once (no reasoning at all): asked again, up to three times.
    for (let attempt = 1; ; ++attempt) {
      await page.fill('#chat-input', 'Why is the sky blue?');
      await page.click('#chat-form button[type=submit]');
      await page.waitForFunction((n) => document.querySelectorAll('.msg.assistant')[n - 1]?.dataset.done === 'true',
          attempt, {timeout: 60000});
      const shown = await page.evaluate((n) => {
        const answer = document.querySelectorAll('.msg.assistant')[n - 1];
        const before = answer.previousElementSibling;
        const metas = document.querySelectorAll('.meta');
        return {reasoning: before?.classList.contains('reasoning') ? before.textContent : null,
                answer: answer.textContent, meta: metas[metas.length - 1].textContent};
      }, attempt);
      if (shown.answer !== '') throw new Error(`the answer holds '${shown.answer}'`);
      if (shown.reasoning) {
        console.log(`     ${shown.reasoning.length} characters of reasoning (attempt ${attempt})`);
        break;
      }
      if (!/finish: stop/.test(shown.meta) || attempt === 3) {
        throw new Error(`no reasoning shown above the answer ('${shown.meta}')`);
      }
    }
    await page.goto(`${base}/`, {waitUntil: 'load'});  // back to the first server (the screenshot's)
  });

  await check('no console errors', async () => {
    const unique = [...new Set(consoleErrors)];
    if (unique.length) throw new Error(`${consoleErrors.length} errors: ${unique.slice(0, 3).join(' | ').slice(0, 1500)}`);
  });

  if (args.screenshot) {
    // Five requests at once, so the timeline's window shows them sharing every step.
    await Promise.all([1, 2, 3, 4, 5].map((i) => streamFromNode(server.port, `Story ${i}`, 48)));
    await page.waitForTimeout(800);  // the last feed updates drawn
    await page.screenshot({path: args.screenshot, fullPage: true});
    console.log(`screenshot: ${args.screenshot}`);
  }
} catch (error) {
  results.push(false);
  console.log(`FAIL browser session: ${error.message}`);
} finally {
  await context?.close();
  server.child.kill('SIGTERM');
  thinking?.child.kill('SIGTERM');
  rmSync(profile, {recursive: true, force: true});
}
const passed = results.filter(Boolean).length;
console.log(`browser: ${passed} passed, ${results.length - passed} failed`);
process.exit(results.length - passed || results.length === 0 ? 1 : 0);
