// Structured outputs and tool calls through the official OpenAI Node library against a real `lockstep serve`
// running a random-weight model at temperature 1: every response must parse and validate against its schema,
// 100 times out of 100 (seeded), for response_format json_schema and for tool_choice "required"; plus
// streaming, named tool choice, tool results flowing back, vLLM / llama.cpp / TGI fields and the 400s.
//
// Usage: node structured_test.mjs --binary PATH/lockstep --model MODEL.gguf [--count 100]
// Prints one line per check and the tallies; exits 1 on the first failure.
import assert from "node:assert/strict";
import OpenAI from "openai";
import { check, parseArgs, startServer } from "./server_process.mjs";

const args = parseArgs("node structured_test.mjs --binary PATH/lockstep --model MODEL.gguf [--count N]");
const COUNT = Number(args.count || 100);

// A validator for the schema subset used here, written independently of the server's grammar compiler.
function violation(value, schema, path = "$") {
  const types = schema.type === undefined ? null : [].concat(schema.type);
  const typeOf = (v) => (v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v);
  if (types && !types.some((t) => t === typeOf(value) || (t === "number" && typeof value === "number"))) {
    return `${path}: ${JSON.stringify(value)} is not ${types.join("|")}`;
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) return `${path}: not in enum`;
  if ("const" in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) return `${path}: not the const`;
  if (schema.anyOf && !schema.anyOf.some((s) => !violation(value, s, path))) return `${path}: no anyOf branch`;
  if (typeof value === "string") {
    const n = [...value].length;
    if (schema.minLength !== undefined && n < schema.minLength) return `${path}: too short`;
    if (schema.maxLength !== undefined && n > schema.maxLength) return `${path}: too long`;
    if (schema.pattern && !new RegExp(schema.pattern, "u").test(value)) return `${path}: pattern`;
    if (schema.format === "date" && !(/^\d{4}-\d{2}-\d{2}$/.test(value) && !isNaN(Date.parse(value + "T00:00:00Z")) &&
        new Date(value + "T00:00:00Z").toISOString().startsWith(value))) return `${path}: bad date ${value}`;
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) return `${path}: below minimum`;
    if (schema.maximum !== undefined && value > schema.maximum) return `${path}: above maximum`;
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) return `${path}: not above`;
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) return `${path}: not below`;
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) return `${path}: too few items`;
    if (schema.maxItems !== undefined && value.length > schema.maxItems) return `${path}: too many items`;
    for (let i = 0; i < value.length && schema.items; i++) {
      const v = violation(value[i], schema.items, `${path}[${i}]`);
      if (v) return v;
    }
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    for (const r of schema.required || []) if (!(r in value)) return `${path}: missing ${r}`;
    for (const [k, v] of Object.entries(value)) {
      if (schema.properties && k in schema.properties) {
        const bad = violation(v, schema.properties[k], `${path}.${k}`);
        if (bad) return bad;
      } else if (schema.additionalProperties === false) {
        return `${path}: unexpected property ${k}`;
      }
    }
  }
  return null;
}

const PERSON = {
  type: "object",
  properties: {
    name: { type: "string", minLength: 1, maxLength: 12 },
    age: { type: "integer", minimum: 0, maximum: 120 },
    city: { type: "string", enum: ["Paris", "Lagos", "Lima", "Osaka"] },
    score: { type: "number", minimum: -1, exclusiveMaximum: 1 },
    tags: { type: "array", items: { type: "string", enum: ["a", "b", "c"] }, maxItems: 2 },
    born: { type: "string", format: "date" },
    nickname: { type: ["string", "null"], maxLength: 4 },
  },
  required: ["name", "age", "city", "score", "tags", "born", "nickname"],
  additionalProperties: false,
};

const TOOLS = [
  { type: "function", function: { name: "get_weather", description: "Weather in a city",
    parameters: { type: "object", properties: { city: { type: "string", maxLength: 16 },
                                                unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
                  required: ["city", "unit"], additionalProperties: false } } },
  { type: "function", function: { name: "add", description: "Adds two integers",
    parameters: { type: "object", properties: { a: { type: "integer", minimum: -1000, maximum: 1000 },
                                                b: { type: "integer", minimum: -1000, maximum: 1000 } },
                  required: ["a", "b"], additionalProperties: false } } },
];
const toolSchema = (name) => TOOLS.find((t) => t.function.name === name)?.function.parameters;

// Runs `n` jobs, `width` at a time.
async function pool(n, width, job) {
  const results = new Array(n);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) {
      const i = next++;
      results[i] = await job(i);
    }
  }));
  return results;
}

const server = await startServer(args.binary, args.model, ["-t", "2", "--model-alias", "m"]);
const url = server.url;
let failed = false;
try {
  const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "none", maxRetries: 0 });
  const ask = [{ role: "user", content: "Describe a person as JSON." }];

  await check(`response_format json_schema: ${COUNT}/${COUNT} valid (seeded, temperature 1)`, async () => {
    const bad = [];
    await pool(COUNT, 8, async (i) => {
      const r = await openai.chat.completions.create({
        model: "m", messages: ask, temperature: 1, seed: i,
        response_format: { type: "json_schema", json_schema: { name: "person", strict: true, schema: PERSON } },
      });
      const text = r.choices[0].message.content;
      let why;
      try {
        why = violation(JSON.parse(text), PERSON);
      } catch (e) {
        why = `not JSON (${r.choices[0].finish_reason}): ${e.message}`;
      }
      if (why) bad.push(`seed ${i}: ${why}: ${text}`);
    });
    console.log(`     json_schema: ${COUNT - bad.length}/${COUNT} parsed and validated`);
    assert.deepEqual(bad, []);
  });

  await check("response_format json_schema, streamed", async () => {
    for (let i = 0; i < 5; i++) {
      const stream = await openai.chat.completions.create({
        model: "m", messages: ask, temperature: 1, seed: 1000 + i, stream: true,
        response_format: { type: "json_schema", json_schema: { name: "person", schema: PERSON } },
      });
      let text = "";
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
      assert.equal(violation(JSON.parse(text), PERSON), null, text);
    }
  });

  await check("response_format json_object", async () => {
    const r = await openai.chat.completions.create({ model: "m", messages: ask, temperature: 1, seed: 3,
      max_tokens: 200, response_format: { type: "json_object" } });
    const text = r.choices[0].message.content;
    if (r.choices[0].finish_reason === "stop") assert.equal(typeof JSON.parse(text), "object", text);
    else assert.equal(text.trimStart()[0], "{");
  });

  await check(`tool_choice required: ${COUNT}/${COUNT} valid calls`, async () => {
    const bad = [];
    await pool(COUNT, 8, async (i) => {
      const r = await openai.chat.completions.create({
        model: "m", messages: [{ role: "user", content: "What is the weather in Lima?" }], temperature: 1,
        seed: i, tools: TOOLS, tool_choice: "required", parallel_tool_calls: false,
      });
      const c = r.choices[0];
      try {
        assert.equal(c.finish_reason, "tool_calls");
        assert.equal(c.message.content, null);
        assert.equal(c.message.tool_calls.length, 1);
        const call = c.message.tool_calls[0];
        assert.equal(call.type, "function");
        assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
        const schema = toolSchema(call.function.name);
        assert.ok(schema, `unknown tool ${call.function.name}`);
        assert.equal(violation(JSON.parse(call.function.arguments), schema), null);
      } catch (e) {
        bad.push(`seed ${i}: ${e.message}: ${JSON.stringify(c)}`);
      }
    });
    console.log(`     tool_choice required: ${COUNT - bad.length}/${COUNT} calls parsed and validated`);
    assert.deepEqual(bad, []);
  });

  await check("tool_choice required, streamed deltas", async () => {
    const stream = await openai.chat.completions.create({
      model: "m", messages: [{ role: "user", content: "Add 2 and 3." }], temperature: 1, seed: 7,
      tools: TOOLS, tool_choice: "required", stream: true,
    });
    const calls = {};
    let finish;
    for await (const chunk of stream) {
      const ch = chunk.choices[0];
      if (!ch) continue;
      for (const d of ch.delta?.tool_calls ?? []) {
        const c = (calls[d.index] ??= { id: "", name: "", arguments: "" });
        if (d.id) c.id = d.id;
        if (d.function?.name) c.name = d.function.name;
        c.arguments += d.function?.arguments ?? "";
      }
      if (ch.finish_reason) finish = ch.finish_reason;
    }
    assert.equal(finish, "tool_calls");
    const list = Object.values(calls);
    assert.ok(list.length >= 1);
    for (const c of list) assert.equal(violation(JSON.parse(c.arguments), toolSchema(c.name)), null);
  });

  await check("the client's own stream helper assembles the same calls as the whole response", async () => {
    // ChatCompletionStream (openai.chat.completions.stream) rebuilds the message from the deltas and throws
    // on any it cannot use (a call without id, type or name, a missing finish_reason or role).
    for (const parallel of [true, false]) {
      const body = { model: "m", messages: [{ role: "user", content: "Add 2 and 3, then the weather." }],
                     temperature: 1, seed: 21, tools: TOOLS, tool_choice: "required",
                     parallel_tool_calls: parallel };
      const whole = await openai.chat.completions.create(body);
      const runner = openai.chat.completions.stream(body);
      const done = [];
      runner.on("tool_calls.function.arguments.done", (e) => done.push(e.name));
      const final = await runner.finalChatCompletion();
      const got = final.choices[0];
      assert.equal(got.finish_reason, "tool_calls");
      // Same seed, same calls (ids are per response: only their form and uniqueness are compared).
      assert.deepEqual(got.message.tool_calls.map((c) => [c.type, c.function.name, c.function.arguments]),
                       whole.choices[0].message.tool_calls.map((c) => [c.type, c.function.name,
                                                                        c.function.arguments]));
      for (const c of got.message.tool_calls) assert.match(c.id, /^call_[A-Za-z0-9]{24}$/);
      assert.equal(new Set(got.message.tool_calls.map((c) => c.id)).size, got.message.tool_calls.length);
      assert.deepEqual(done, got.message.tool_calls.map((c) => c.function.name));
      if (!parallel) assert.equal(got.message.tool_calls.length, 1);
    }
  });

  await check("named tool_choice, whole and streamed", async () => {
    const body = { model: "m", messages: [{ role: "user", content: "Add." }], temperature: 1, seed: 11,
                   max_tokens: 200, tools: TOOLS, tool_choice: { type: "function", function: { name: "add" } } };
    const r = await openai.chat.completions.create(body);
    const call = r.choices[0].message.tool_calls[0];
    assert.equal(call.function.name, "add");
    assert.equal(violation(JSON.parse(call.function.arguments), toolSchema("add")), null);
    const stream = await openai.chat.completions.create({ ...body, stream: true });
    let args = "", name = "", id = "";
    for await (const chunk of stream) {
      for (const d of chunk.choices[0]?.delta?.tool_calls ?? []) {
        name ||= d.function?.name ?? "";
        id ||= d.id ?? "";
        args += d.function?.arguments ?? "";
      }
    }
    assert.equal(name, "add");
    assert.match(id, /^call_/);
    assert.equal(args, call.function.arguments);  // same seed: the same call, streamed in pieces
  });

  await check("tool results flow back through the template", async () => {
    const r = await openai.chat.completions.create({
      model: "m", temperature: 0, max_tokens: 4, tools: TOOLS,
      messages: [
        { role: "user", content: "Weather in Lima?" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function",
          function: { name: "get_weather", arguments: "{\"city\": \"Lima\", \"unit\": \"celsius\"}" } }] },
        { role: "tool", tool_call_id: "call_1", content: "18 degrees" },
      ],
    });
    assert.equal(r.choices[0].message.role, "assistant");
  });

  await check("vLLM guided_json / guided_choice and llama.cpp json_schema", async () => {
    const choice = await openai.chat.completions.create({ model: "m", messages: ask, temperature: 1, seed: 5,
      max_tokens: 10, guided_choice: ["yes", "no", "maybe"] });
    assert.ok(["yes", "no", "maybe"].includes(choice.choices[0].message.content), choice.choices[0].message.content);
    for (const field of ["guided_json", "json_schema"]) {
      const r = await openai.chat.completions.create({ model: "m", messages: ask, temperature: 1, seed: 6,
        [field]: PERSON });
      assert.equal(violation(JSON.parse(r.choices[0].message.content), PERSON), null);
    }
    const gbnf = await openai.completions.create({ model: "m", prompt: "Answer:", temperature: 1, seed: 9,
      max_tokens: 10, grammar: 'root ::= "A" [0-9]{3}' });
    assert.match(gbnf.choices[0].text, /^A[0-9]{3}$/);
  });

  await check("TGI parameters.grammar regex", async () => {
    const res = await fetch(`${url}/generate`, { method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ inputs: "Code:", parameters: { max_new_tokens: 20, seed: 4, do_sample: true,
        grammar: { type: "regex", value: "[A-Z]{2}-\\d{3}" } } }) });
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.match(body.generated_text, /^[A-Z]{2}-\d{3}$/);
  });

  await check("unsupported schema keywords and unknown output fields are 400s", async () => {
    const cases = [
      [{ response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "array", uniqueItems: true } } } },
       /uniqueItems/],
      [{ guided_whitespace_pattern: "\\s*" }, /guided_whitespace_pattern/],
      [{ tools: TOOLS, tool_choice: { type: "function", function: { name: "nope" } } }, /nope/],
    ];
    for (const [extra, pattern] of cases) {
      await assert.rejects(
        openai.chat.completions.create({ model: "m", messages: ask, max_tokens: 4, ...extra }),
        (e) => e instanceof OpenAI.BadRequestError && pattern.test(e.message),
      );
    }
  });
} catch (e) {
  failed = true;
} finally {
  server.child.kill("SIGTERM");
}
if (failed) {
  console.log(server.log());
  process.exit(1);
}
