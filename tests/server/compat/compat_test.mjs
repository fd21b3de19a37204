// Compatibility check: drives a real `lockstep serve` with the official OpenAI Node library and Hugging Face's
// @huggingface/inference client, streamed and not, and checks the TGI routes' shapes the way
// huggingface_hub's InferenceClient.text_generation reads them (POST / and /generate_stream).
//
// Usage: node compat_test.mjs --binary PATH/lockstep --model MODEL.gguf
// Starts the server on a free port (with an API key), runs every check, stops it with SIGTERM and expects
// exit code 0. Prints one line per check; exits 1 on the first failure.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { InferenceClient } from "@huggingface/inference";
import { check, parseArgs, startServer } from "./server_process.mjs";

const args = parseArgs("node compat_test.mjs --binary PATH/lockstep --model MODEL.gguf");
const KEY = "sk-compat-test";

async function readSse(response) {
  const text = await response.text();
  return text.split("\n\n").filter((b) => b.startsWith("data:")).map((b) => b.slice(5).trim());
}

const server = await startServer(args.binary, args.model, ["-t", "1", "--api-key", KEY, "--model-alias", "compat-model"]);
const url = server.url;
let failed = false;
try {
  const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: KEY, maxRetries: 0 });
  const messages = [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hello." }];

  await check("openai models.list", async () => {
    const models = [];
    for await (const m of openai.models.list()) models.push(m.id);
    assert.deepEqual(models, ["compat-model"]);
  });

  let wholeChat;
  await check("openai chat.completions.create", async () => {
    wholeChat = await openai.chat.completions.create({ model: "compat-model", messages, max_tokens: 8, temperature: 0 });
    assert.equal(wholeChat.object, "chat.completion");
    assert.equal(wholeChat.choices[0].message.role, "assistant");
    assert.equal(typeof wholeChat.choices[0].message.content, "string");
    assert.equal(wholeChat.choices[0].finish_reason, "length");
    assert.equal(wholeChat.usage.completion_tokens, 8);
  });

  await check("openai chat stream + include_usage", async () => {
    const stream = await openai.chat.completions.create({
      model: "compat-model", messages, max_tokens: 8, temperature: 0, stream: true,
      stream_options: { include_usage: true },
    });
    let text = "", role = null, usage = null, finish = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        if (c.delta.role) role = c.delta.role;
        if (c.delta.content) text += c.delta.content;
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    assert.equal(role, "assistant");
    assert.equal(text, wholeChat.choices[0].message.content);
    assert.equal(finish, "length");
    assert.equal(usage.completion_tokens, 8);
    assert.equal(usage.total_tokens, usage.prompt_tokens + 8);
  });

  await check("openai chat logprobs + n", async () => {
    const r = await openai.chat.completions.create({
      model: "compat-model", messages, max_completion_tokens: 3, logprobs: true, top_logprobs: 2, n: 2, seed: 7,
    });
    assert.equal(r.choices.length, 2);
    assert.equal(r.choices[0].logprobs.content.length, 3);
    assert.equal(r.choices[0].logprobs.content[0].top_logprobs.length, 2);
  });

  let wholeCompletion;
  await check("openai completions.create (+ logprobs)", async () => {
    wholeCompletion = await openai.completions.create({
      model: "compat-model", prompt: "Once upon a time", max_tokens: 6, temperature: 0, logprobs: 2,
    });
    assert.equal(wholeCompletion.object, "text_completion");
    assert.equal(wholeCompletion.choices[0].logprobs.tokens.length, 6);
    assert.equal(wholeCompletion.usage.completion_tokens, 6);
  });

  await check("openai completions stream", async () => {
    const stream = await openai.completions.create({
      model: "compat-model", prompt: "Once upon a time", max_tokens: 6, temperature: 0, stream: true,
      stream_options: { include_usage: true },
    });
    let text = "", usage = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) text += c.text;
    }
    assert.equal(text, wholeCompletion.choices[0].text);
    assert.equal(usage.completion_tokens, 6);
  });

  await check("openai errors: 400 naming the field, 401 without key", async () => {
    await assert.rejects(
      openai.chat.completions.create({ model: "compat-model", messages, temperature: 5 }),
      (e) => e.status === 400 && e.param === "temperature" && /temperature/.test(e.message),
    );
    const anonymous = new OpenAI({ baseURL: `${url}/v1`, apiKey: "wrong", maxRetries: 0 });
    await assert.rejects(anonymous.models.list(), (e) => e.status === 401);
  });

  await check("openai embeddings.create (base64 by default, and float)", async () => {
    // The library asks for base64 unless told otherwise and decodes it into numbers.
    const input = ["Once upon a time", "Say hello."];
    const r = await openai.embeddings.create({ model: "compat-model", input });
    assert.equal(r.object, "list");
    assert.equal(r.data.length, 2);
    const norm = Math.hypot(...r.data[0].embedding);
    assert.ok(Math.abs(norm - 1) < 1e-5, `norm ${norm}`);
    const floats = await openai.embeddings.create({ model: "compat-model", input, encoding_format: "float" });
    assert.deepEqual(floats.data[1].embedding, r.data[1].embedding);
    assert.equal(floats.usage.prompt_tokens, r.usage.prompt_tokens);
    const cut = await openai.embeddings.create({ model: "compat-model", input: "hi", dimensions: 8 });
    assert.equal(cut.data[0].embedding.length, 8);
  });

  let wholeResponse;
  await check("openai responses.create", async () => {
    wholeResponse = await openai.responses.create({
      model: "compat-model", instructions: "Be brief.", input: "Say hello.", max_output_tokens: 8, temperature: 0,
    });
    assert.equal(wholeResponse.object, "response");
    assert.equal(wholeResponse.status, "incomplete");
    assert.equal(wholeResponse.incomplete_details.reason, "max_output_tokens");
    assert.equal(wholeResponse.output[0].type, "message");
    // output_text is the library's own sum of the output_text parts; the same text as chat's for these messages.
    assert.equal(wholeResponse.output_text, wholeChat.choices[0].message.content);
    assert.equal(wholeResponse.usage.output_tokens, 8);
    assert.equal(wholeResponse.usage.input_tokens, wholeChat.usage.prompt_tokens);
  });

  await check("openai responses.create stream", async () => {
    const stream = await openai.responses.create({
      model: "compat-model", instructions: "Be brief.", input: "Say hello.", max_output_tokens: 8, temperature: 0,
      stream: true,
    });
    let text = "", last = null, sequence = 0;
    for await (const event of stream) {
      assert.equal(event.sequence_number, sequence++);
      if (event.type === "response.output_text.delta") text += event.delta;
      last = event;
    }
    assert.equal(text, wholeResponse.output_text);
    assert.equal(last.type, "response.incomplete");
    assert.equal(last.response.output_text ?? text, text);
    assert.equal(last.response.usage.output_tokens, 8);
    // The library's stream helper rebuilds the response from the events, checking that each one fits.
    const helper = openai.responses.stream({
      model: "compat-model", instructions: "Be brief.", input: "Say hello.", max_output_tokens: 8, temperature: 0,
    });
    const rebuilt = await helper.finalResponse();  // an incomplete one: the snapshot the events built
    assert.equal(rebuilt.output[0].content[0].text, text);
  });

  await check("openai responses.create include logprobs + top_logprobs", async () => {
    const params = {
      model: "compat-model", instructions: "Be brief.", input: "Say hello.", max_output_tokens: 8, temperature: 0,
      include: ["message.output_text.logprobs"], top_logprobs: 2,
    };
    const r = await openai.responses.create(params);
    assert.equal(r.output_text, wholeResponse.output_text);
    const logprobs = r.output[0].content[0].logprobs;
    assert.equal(logprobs.length, 8);  // one per token
    for (const lp of logprobs) {
      assert.equal(typeof lp.token, "string");
      assert.ok(lp.logprob <= 0, JSON.stringify(lp));
      assert.equal(lp.top_logprobs.length, 2);
    }
    const streamed = [];
    for await (const event of await openai.responses.create({ ...params, stream: true })) {
      if (event.type === "response.output_text.delta") streamed.push(...event.logprobs);
    }
    assert.deepEqual(streamed.map((lp) => lp.token), logprobs.map((lp) => lp.token));
  });

  await check("openai responses function call + function_call_output", async () => {
    const tools = [{
      type: "function", name: "add", description: "adds", strict: true,
      parameters: {
        type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } },
        required: ["a", "b"], additionalProperties: false,
      },
    }];
    const r = await openai.responses.create({
      model: "compat-model", input: "Add 1 and 2.", tools, tool_choice: { type: "function", name: "add" }, seed: 1,
    });
    const call = r.output.find((item) => item.type === "function_call");
    assert.equal(call.name, "add");
    const args = JSON.parse(call.arguments);
    assert.ok(Number.isInteger(args.a) && Number.isInteger(args.b), call.arguments);
    const streamed = await openai.responses.stream({
      model: "compat-model", input: "Add 1 and 2.", tools, tool_choice: { type: "function", name: "add" }, seed: 1,
    }).finalResponse();
    assert.equal(streamed.status, "completed");
    assert.equal(streamed.output[0].arguments, call.arguments);  // same seed, same call
    const next = await openai.responses.create({
      model: "compat-model", tools, max_output_tokens: 2,
      input: [{ role: "user", content: "Add 1 and 2." }, call, { type: "function_call_output", call_id: call.call_id, output: "3" }],
    });
    assert.equal(next.object, "response");
    assert.ok(next.usage.input_tokens > r.usage.input_tokens);
    await assert.rejects(
      openai.responses.create({ model: "compat-model", input: "x", tools: [{ type: "web_search" }] }),
      (e) => e.status === 400 && e.param === "tools[0].type",
    );
  });

  await check("openai reasoning: chat reasoning_content, Responses reasoning item (stream helper)", async () => {
    // A second server whose chat template opens a <think> block in every generation prompt (DeepSeek-R1
    // style): the random model's whole reply is reasoning.
    const dir = mkdtempSync(join(tmpdir(), "lockstep-compat-"));
    const template = join(dir, "think.jinja");
    writeFileSync(template, "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n" +
      "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}");
    const thinking = await startServer(args.binary, args.model, ["-t", "1", "--chat-template", template]);
    try {
      const client = new OpenAI({ baseURL: `${thinking.url}/v1`, apiKey: "none", maxRetries: 0 });
      const model = (await client.models.list()).data[0].id;
      const chat = await client.chat.completions.create({
        model, messages: [{ role: "user", content: "Hi" }], max_tokens: 8, temperature: 0,
      });
      const reasoning = chat.choices[0].message.reasoning_content;
      assert.equal(typeof reasoning, "string");
      assert.equal(chat.choices[0].message.content, "");
      let streamed = "";
      for await (const chunk of await client.chat.completions.create({
        model, messages: [{ role: "user", content: "Hi" }], max_tokens: 8, temperature: 0, stream: true,
      })) {
        streamed += chunk.choices[0]?.delta?.reasoning_content ?? "";
      }
      assert.equal(streamed, reasoning);
      // The library's stream helper rebuilds the response from the events (reasoning_text deltas included).
      const rebuilt = await client.responses.stream({ model, input: "Hi", max_output_tokens: 8, temperature: 0 })
        .finalResponse();
      assert.equal(rebuilt.output[0].type, "reasoning");
      assert.equal(rebuilt.output[0].content[0].text, reasoning);  // the same greedy tokens
      assert.equal(rebuilt.output[1].type, "message");
      assert.equal(rebuilt.output[1].content[0].text, "");
    } finally {
      thinking.child.removeAllListeners("exit");
      thinking.child.kill("SIGTERM");
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const hf = new InferenceClient(KEY, { endpointUrl: url });
  await check("hf textGeneration", async () => {
    const r = await hf.textGeneration({ inputs: "Once upon a time", parameters: { max_new_tokens: 6, temperature: 0 } });
    assert.equal(r.generated_text, wholeCompletion.choices[0].text);
  });

  await check("hf textGenerationStream", async () => {
    let text = "";
    for await (const chunk of hf.textGenerationStream({
      inputs: "Once upon a time", parameters: { max_new_tokens: 6, temperature: 0 },
    })) {
      for (const c of chunk.choices ?? []) text += c.text ?? "";
    }
    assert.equal(text, wholeCompletion.choices[0].text);
  });

  await check("hf chatCompletion + chatCompletionStream", async () => {
    const r = await hf.chatCompletion({ messages, max_tokens: 8, temperature: 0 });
    assert.equal(r.choices[0].message.content, wholeChat.choices[0].message.content);
    let text = "";
    for await (const chunk of hf.chatCompletionStream({ messages, max_tokens: 8, temperature: 0 })) {
      text += chunk.choices[0]?.delta?.content ?? "";
    }
    assert.equal(text, wholeChat.choices[0].message.content);
  });

  // huggingface_hub's InferenceClient.text_generation posts {inputs, parameters, stream} to the endpoint root.
  const headers = { "Content-Type": "application/json", Authorization: `Bearer ${KEY}` };
  const parameters = { max_new_tokens: 5, details: true, decoder_input_details: false, do_sample: false,
                       return_full_text: false, stop: [], top_n_tokens: null, watermark: false };
  let tgiText;
  await check("tgi POST / (text_generation, details)", async () => {
    const r = await fetch(`${url}/`, { method: "POST", headers, body: JSON.stringify({ inputs: "Hello", parameters, stream: false }) });
    assert.equal(r.status, 200);
    const body = await r.json();
    assert.ok(Array.isArray(body) && body.length === 1);
    tgiText = body[0].generated_text;
    const d = body[0].details;
    assert.ok(["length", "eos_token", "stop_sequence"].includes(d.finish_reason));
    assert.equal(d.generated_tokens, d.tokens.length);
    for (const t of d.tokens) assert.deepEqual(Object.keys(t).sort(), ["id", "logprob", "special", "text"]);
  });

  await check("tgi POST / stream (text_generation stream=True, details)", async () => {
    const r = await fetch(`${url}/`, { method: "POST", headers, body: JSON.stringify({ inputs: "Hello", parameters, stream: true }) });
    assert.equal(r.status, 200);
    assert.ok(r.headers.get("content-type").startsWith("text/event-stream"));
    const events = (await readSse(r)).map((d) => JSON.parse(d));
    assert.equal(events.length, 5);
    let text = "";
    events.forEach((e, i) => {
      assert.equal(e.index, i);
      text += e.token.text;
      assert.equal(e.generated_text === null, i < events.length - 1);
      assert.equal(e.details === null, i < events.length - 1);
    });
    assert.equal(events.at(-1).generated_text, tgiText);
    assert.equal(text, tgiText);
    assert.ok(events.at(-1).details.finish_reason);
  });

  await check("tgi errors: 422 validation, 401 without key", async () => {
    const bad = await fetch(`${url}/generate`, { method: "POST", headers, body: JSON.stringify({ inputs: "x", parameters: { top_n_tokens: 99 } }) });
    assert.equal(bad.status, 422);
    assert.equal((await bad.json()).error_type, "validation");
    const anon = await fetch(`${url}/generate`, { method: "POST", body: JSON.stringify({ inputs: "x" }), headers: { "Content-Type": "application/json" } });
    assert.equal(anon.status, 401);
  });
} catch (e) {
  failed = true;
  console.log(server.log());
} finally {
  server.child.removeAllListeners("exit");
  const exited = new Promise((resolve) => server.child.on("exit", (code) => resolve(code)));
  server.child.kill("SIGTERM");
  const code = await exited;
  if (code !== 0) {
    console.log(`FAIL server exit code after SIGTERM: ${code}`);
    failed = true;
  } else {
    console.log("ok   server drained and exited 0 after SIGTERM");
  }
}
process.exit(failed ? 1 : 0);
