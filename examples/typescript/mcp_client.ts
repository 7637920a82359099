// An MCP host's session with blendmesh, driven by the official TypeScript SDK: either
// client line, on stdio or at /mcp. It lists the tools and compiles every schema they
// declare, runs a request in words, reads resources, inspects and renders, and answers
// approvals as a host's person would: accept approves, decline rejects, and a run the
// person cancels (cancel_run) while its question is open ends cancelled. Prints one JSON
// report of what it did and saw; the tests (tests/e2e/test_mcp_ts_stdio.py,
// tests/integration/test_mcp_ts.py, checks in tests/support/ts_mcp.py) assert on it.
//
//   tsx mcp_client.ts LINE SCENE stdio '{"command": ..., "args": [...], "env": {...}, "cwd": ...}'
//   tsx mcp_client.ts LINE SCENE http URL TOKEN
//
// LINE is "1" (@modelcontextprotocol/sdk 1.x: 2025-11-25, the approval is an elicitation
// the server sends) or "2" (@modelcontextprotocol/client 2.x: 2026-07-28, the approval is
// a Multi Round-Trip Request the SDK answers and retries by itself).

import { Client as Client1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as Stdio1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport as Http1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator as Ajv1 } from "@modelcontextprotocol/sdk/validation/ajv";
import {
  Client as Client2,
  StreamableHTTPClientTransport as Http2,
  isInputRequiredResult,
  specTypeSchemas,
  withInputRequired,
} from "@modelcontextprotocol/client";
import { StdioClientTransport as Stdio2 } from "@modelcontextprotocol/client/stdio";
import { AjvJsonSchemaValidator as Ajv2 } from "@modelcontextprotocol/client/validators/ajv";

type Json = Record<string, unknown>;
// "cancel-run": the person stops the run elsewhere (cancel_run) while the question is
// open, then dismisses the question.
type Answer = "accept" | "decline" | "cancel-run";
interface Tool {
  name: string;
  inputSchema: unknown;
  outputSchema?: unknown;
}
interface ToolResult {
  content?: { type: string; mimeType?: string; data?: string }[];
  structuredContent?: unknown;
  isError?: boolean;
}
interface Validators {
  getValidator(schema: never): (input: unknown) => { valid: boolean; errorMessage?: string };
}

const HOST = { name: "blendmesh-ts-check", version: "1.0.0" };
const FORMS = { elicitation: { form: {} } };

// What the person answers to the next question the server asks; each answer is used once.
const answers: Answer[] = [];
const asked: string[] = [];
const cancelledWhileAsked: Json[] = [];

// The session's tool call, its answer checked and recorded (set once the session runs).
let callChecked: (name: string, args: Json) => Promise<ToolResult> = async () => {
  throw new Error("asked before the session began");
};

async function answerNext(
  message: string,
): Promise<{ action: "accept" | "decline"; content?: { approve: boolean } }> {
  asked.push(message);
  const action = answers.shift() ?? "decline"; // a question nobody expected: rejected
  if (action === "cancel-run") {
    const runId = /approve run (\S+):/.exec(message)?.[1] ?? "";
    const stopped = await callChecked("cancel_run", { run_id: runId });
    cancelledWhileAsked.push({ run_id: runId, ...(stopped.structuredContent as Json) });
    return { action: "decline" };
  }
  return action === "accept" ? { action, content: { approve: true } } : { action };
}

/** One client line's session, as the checks below use it. */
interface Session {
  line: string;
  protocolVersion: string | undefined;
  validators: Validators;
  listTools(): Promise<Tool[]>;
  callTool(name: string, args: Json): Promise<ToolResult>;
  readResource(uri: string): Promise<{ uri: string; mimeType?: string; text?: string }[]>;
  /** A call whose approval is not answered here: what it answered, and the run that waits. */
  callUnanswered(name: string, args: Json): Promise<{ kind: string; runId: string | undefined }>;
  tasks(): Promise<Json>;
  close(): Promise<void>;
}

interface Where {
  kind: "stdio" | "http";
  server?: { command: string; args?: string[]; env?: Record<string, string>; cwd?: string };
  url?: string;
  token?: string;
}

async function line1(where: Where): Promise<Session> {
  const client = new Client1(HOST, { capabilities: FORMS, jsonSchemaValidator: new Ajv1() });
  client.setRequestHandler(ElicitRequestSchema, async (request) =>
    answerNext(request.params.message),
  );
  const transport =
    where.kind === "stdio"
      ? new Stdio1({ ...where.server!, stderr: "inherit" })
      : new Http1(new URL(where.url!), {
          requestInit: { headers: { Authorization: `Bearer ${where.token}` } },
        });
  // The version the handshake agreed, as the client hands it to its transport.
  let version: string | undefined;
  const told = transport as unknown as { setProtocolVersion?: (v: string) => void };
  const passOn = told.setProtocolVersion?.bind(transport);
  told.setProtocolVersion = (v: string) => {
    version = v;
    passOn?.(v);
  };
  await client.connect(transport);
  return {
    line: "@modelcontextprotocol/sdk",
    get protocolVersion() {
      return version;
    },
    validators: new Ajv1() as unknown as Validators,
    listTools: async () => (await client.listTools()).tools as Tool[],
    callTool: async (name, args) =>
      (await client.callTool({ name, arguments: args }, undefined, {
        timeout: 300_000,
      })) as ToolResult,
    readResource: async (uri) =>
      (await client.readResource({ uri })).contents as { uri: string; text?: string }[],
    callUnanswered: async () => {
      throw new Error("line 1 answers every approval it is asked in its elicitation handler");
    },
    // 2025-11-25's own tasks (experimental in this SDK) are not what blendmesh serves:
    // it declares the tasks extension on 2026-07-28 only.
    tasks: async () => ({
      offered: false,
      why: "blendmesh declares tasks on 2026-07-28 only",
      server_declares: Boolean((client.getServerCapabilities() as Json | undefined)?.tasks),
    }),
    close: () => client.close(),
  };
}

async function line2(where: Where): Promise<Session> {
  const client = new Client2(HOST, {
    capabilities: FORMS,
    jsonSchemaValidator: new Ajv2(),
    versionNegotiation: { mode: "auto" }, // probe server/discover, as a 2026 host does
  });
  client.setRequestHandler("elicitation/create", async (request) => {
    const params = request.params as { message: string };
    return answerNext(params.message);
  });
  const transport =
    where.kind === "stdio"
      ? new Stdio2({ ...where.server!, stderr: "inherit" })
      : new Http2(new URL(where.url!), {
          requestInit: { headers: { Authorization: `Bearer ${where.token}` } },
        });
  await client.connect(transport);
  return {
    line: "@modelcontextprotocol/client",
    protocolVersion: client.getNegotiatedProtocolVersion(),
    validators: new Ajv2() as unknown as Validators,
    listTools: async () => (await client.listTools()).tools as Tool[],
    callTool: async (name, args) =>
      (await client.callTool({ name, arguments: args }, { timeout: 300_000 })) as ToolResult,
    readResource: async (uri) =>
      (await client.readResource({ uri })).contents as { uri: string; text?: string }[],
    callUnanswered: async (name, args) => {
      // The SDK's manual path: the InputRequiredResult comes back instead of being
      // answered. Through request(), as the SDK documents it: callTool() in 2.4.0 checks
      // an input_required answer against the tool's outputSchema and throws.
      const answer: unknown = await client.request(
        { method: "tools/call", params: { name, arguments: args } },
        withInputRequired(specTypeSchemas.CallToolResult),
        { timeout: 300_000, allowInputRequired: true },
      );
      if (!isInputRequiredResult(answer)) {
        return { kind: "complete", runId: undefined };
      }
      const meta = (answer as { _meta?: Json })._meta ?? {};
      return { kind: "input_required", runId: meta["blendmesh/run_id"] as string | undefined };
    },
    tasks: async () => {
      // The tasks extension's methods: does this client line send them on 2026-07-28?
      try {
        await client.request(
          { method: "tasks/get" as never, params: { taskId: "probe" } } as never,
          { timeout: 30_000 },
        );
        return { offered: true };
      } catch (error) {
        return { offered: false, why: String((error as Error).message ?? error) };
      }
    },
    close: () => client.close(),
  };
}

/** The outcome of a compiled schema, or what kept it from compiling. */
function compiles(validators: Validators, schema: unknown): { ok: boolean; error?: string } {
  try {
    validators.getValidator(schema as never);
    return { ok: true };
  } catch (error) {
    return { ok: false, error: String(error) };
  }
}

function structured(result: ToolResult): Json {
  const data = result.structuredContent;
  if (typeof data !== "object" || data === null) {
    throw new Error(`no structuredContent in ${JSON.stringify(result).slice(0, 500)}`);
  }
  return data as Json;
}

function objectNames(data: Json): string[] {
  const scene = data.scene as { objects?: { name: string }[] } | null | undefined;
  return (scene?.objects ?? []).map((o) => o.name).sort();
}

function failure(data: Json): string | null {
  const failed = data.failure as { error_code?: string } | null | undefined;
  return failed?.error_code ?? null;
}

async function drive(session: Session, scene: string): Promise<Json> {
  const report: Json = { line: session.line, protocol_version: session.protocolVersion };
  const tools = await session.listTools();
  const byName = new Map(tools.map((t) => [t.name, t]));
  report.tools = tools.map((t) => ({
    name: t.name,
    input_schema: compiles(session.validators, t.inputSchema),
    output_schema: t.outputSchema === undefined ? null : compiles(session.validators, t.outputSchema),
  }));
  const calls: Json[] = [];
  report.calls = calls;

  // Every call's structured content is checked against the tool's outputSchema here, with
  // the SDK's own validator (the SDK checks it too, and throws when it does not match).
  async function call(name: string, args: Json): Promise<ToolResult> {
    const result = await session.callTool(name, args);
    const schema = byName.get(name)?.outputSchema;
    const checked =
      schema === undefined
        ? { valid: null, errorMessage: "no outputSchema" }
        : session.validators.getValidator(schema as never)(result.structuredContent);
    calls.push({
      tool: name,
      is_error: result.isError ?? false,
      matches_output_schema: checked.valid,
      ...(checked.valid === false ? { schema_error: checked.errorMessage } : {}),
    });
    return result;
  }
  callChecked = call;

  async function run(request: string): Promise<Json> {
    const data = structured(await call("run", { scene_id: scene, request }));
    return {
      run_id: data.run_id,
      status: data.status,
      failure: failure(data),
      objects: objectNames(data),
      tools_run: ((data.receipts as { tool_name: string }[] | undefined) ?? []).map(
        (r) => r.tool_name,
      ),
      error: (data.error as { message?: string } | null | undefined)?.message ?? null,
    };
  }

  const made = await run("add a cube named Box");
  report.made = made;

  const contents = await session.readResource(`blendmesh://scenes/${scene}`);
  const inspection = JSON.parse(contents[0]?.text ?? "{}") as { objects?: { name: string }[] };
  const catalog = await session.readResource("blendmesh://catalog");
  report.resources = {
    scene_objects: (inspection.objects ?? []).map((o) => o.name).sort(),
    catalog_names_delete: (catalog[0]?.text ?? "").includes("object.delete"),
  };

  const inspected = structured(await call("inspect_object", { scene_id: scene, name: "Box" }));
  const viewed = await call("render_view", { scene_id: scene, width: 64, height: 64 });
  const image = viewed.content?.find((c) => c.type === "image");
  report.inspected = { name: inspected.name, type: inspected.type };
  report.rendered = {
    content: (viewed.content ?? []).map((c) => c.type),
    mime_type: image?.mimeType,
    png: image?.data ? Buffer.from(image.data, "base64").subarray(0, 8).toString("hex") : null,
  };

  // The person declines first: the run is rejected and Box stays; then accepts.
  answers.push("decline");
  const declined = await run("delete Box");
  const askedOnDecline = asked.length;
  answers.push("accept");
  const approved = await run("delete Box");
  report.declined = { ...declined, asked: askedOnDecline };
  report.approved = { ...approved, asked: asked.length - askedOnDecline };
  report.asked = asked;

  // The person stops the run (cancel_run) while its question is open, then dismisses it.
  await run("add a cube named Crate");
  answers.push("cancel-run");
  const askedBefore = asked.length;
  const stoppedCall = await run("delete Crate");
  report.cancelled_while_asked = {
    answer: stoppedCall,
    asked: asked.length - askedBefore,
    cancel_run: cancelledWhileAsked.map((c) => ({
      run_id: c.run_id,
      status: c.status,
      failure: failure(c),
    })),
  };

  // A run nobody answers, cancelled: where the line hands the waiting call back unanswered.
  if (session.line === "@modelcontextprotocol/client") {
    await run("add a cube named Pallet");
    const waiting = await session.callUnanswered("run", { scene_id: scene, request: "delete Pallet" });
    const cancelled = waiting.runId
      ? structured(await call("cancel_run", { run_id: waiting.runId }))
      : {};
    const after = waiting.runId
      ? structured(await call("run_status", { run_id: waiting.runId }))
      : {};
    report.cancel = {
      answered: waiting.kind,
      run_id: waiting.runId,
      cancel_run_status: cancelled.status,
      status: after.status,
      failure: failure(after),
    };
  }

  const listed = structured(await call("runs", {}));
  report.runs = ((listed.runs as { run_id: string }[] | undefined) ?? []).map((r) => r.run_id);
  const status = structured(await call("run_status", { run_id: approved.run_id as string }));
  report.approved_status = status.status;
  await call("scene", { scene_id: scene });
  await call("scenes", {});
  await call("preview", { scene_id: scene });
  await call("scene_history", { scene_id: scene });
  await call("audit", {});
  // The catalog found on demand: the core set and the categories, then a search.
  const core = structured(await call("list_category", {}));
  const bevel = structured(await call("search_tools", { query: "bevel edges", limit: 3 }));
  report.found = {
    core: ((core.tools as { name: string }[] | undefined) ?? []).map((t) => t.name),
    search: ((bevel.tools as { name: string }[] | undefined) ?? []).map((t) => t.name),
  };
  // What a revision changed, and the scene as a file.
  const changes = structured(await call("scene_changes", { scene_id: scene }));
  const exported = structured(await call("export_scene", { scene_id: scene, format: "glb" }));
  // A run again from its first operation: what it committed answers as a no-op.
  const keg = await run("add a cube named Keg at 3 0 0");
  const again = structured(await call("rerun_run", { run_id: keg.run_id as string, from_op: 1 }));
  // A render job, cancelled at once, then read back; the camera is what it renders from.
  await run("add a camera named Cam at 0 -6 2");
  const job = structured(
    await call("render", { scene_id: scene, frames: "1-200", engine: "workbench", samples: 1, size: "16x16" }),
  );
  const stopped = structured(await call("cancel_render", { job_id: job.job_id as string }));
  const read = structured(await call("render_job", { job_id: job.job_id as string }));
  report.more = {
    changes_revision: changes.revision,
    exported_format: exported.format,
    rerun_status: again.status,
    rerun_receipts: ((again.receipts as { status: string }[] | undefined) ?? []).map((r) => r.status),
    render_cancelled: stopped.status,
    render_read: read.status,
  };
  report.tasks = await session.tasks();
  return report;
}

async function main(argv: string[]): Promise<void> {
  const [lineName, scene, kind, ...rest] = argv;
  const where: Where =
    kind === "stdio"
      ? { kind, server: JSON.parse(rest[0]) }
      : { kind: "http", url: rest[0], token: rest[1] };
  const session = lineName === "1" ? await line1(where) : await line2(where);
  try {
    process.stdout.write(JSON.stringify(await drive(session, scene)) + "\n");
  } finally {
    await session.close();
  }
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  },
);
