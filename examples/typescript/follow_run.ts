/**
 * Run a plan on a blendmesh mesh over plain NATS, follow it to its result, read its audit.
 *
 * Like examples/python/follow_run.py it uses nothing of blendmesh but the contract in
 * docs/bus.md: the `nats` npm package only. It prints one JSON object per line:
 *
 *   {"kind": "event", "type": "run.planned", ...}     every event of the run, in order
 *   {"kind": "result", "status": "completed", ...}   the run's end (or its wait)
 *   {"kind": "audit", "operation_id": "a", ...}       each audit record of the run
 *
 * Usage (npm ci once, here):
 *
 *   npx tsx follow_run.ts --login ana.json --scene demo --plan plan.json
 *
 * It logs in as its user with the user's own NKey (nats.js's nkeyAuthenticator): the
 * mesh's operator makes the login file with `blendmesh users add ana --new-key ana.json`
 * (the seed is inside), or `blendmesh users login ana --output ana.json` for a key the
 * user made, the seed then in --seed-file PATH or BLENDMESH_NKEY_SEED. The login reaches
 * only the bus door's subjects for its user; the server refuses it everything else.
 * Exit status: 0 completed, 1 failed, 2 refused, 3 waiting for a person's approval.
 */

import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

import { connect, nkeyAuthenticator, type NatsConnection, type Subscription } from "nats";

// The run's end: the result events, and the one after which a person must answer.
const ENDED: Record<string, string> = {
  "run.completed": "completed",
  "run.failed": "failed",
  "run.plan_rejected": "failed",
};
const WAITING = "run.approval_requested";
const SEED_ENV = "BLENDMESH_NKEY_SEED";

type Json = Record<string, unknown>;

interface Login {
  url: string;
  prefix: string;
  user: string;
  subject_user: string;
  run_prefix: string;
  inbox_prefix: string;
  seed: string;
}

function emit(kind: string, fields: Json): void {
  process.stdout.write(`${JSON.stringify({ kind, ...fields })}\n`);
}

/** The bus door as one user sees it: `<prefix>.api.<user>.<verb>` (docs/bus.md §4). */
class Door {
  constructor(
    readonly nc: NatsConnection,
    readonly login: Login,
  ) {}

  async ask(verb: string, body: Json): Promise<Json> {
    const subject = `${this.login.prefix}.api.${this.login.subject_user}.${verb}`;
    const reply = await this.nc.request(subject, new TextEncoder().encode(JSON.stringify(body)), {
      timeout: 10_000,
    });
    const answer = JSON.parse(new TextDecoder().decode(reply.data)) as Json;
    if (!answer.ok) {
      const error = answer.error as { code: string; message: string };
      throw new Error(`the mesh refused: ${error.code}: ${error.message}`);
    }
    return answer;
  }

  feed(runId: string): string {
    return `${this.login.prefix}.feed.${this.login.subject_user}.run.${runId}.*`;
  }

  /** Every event of the run so far, page by page. */
  async events(runId: string): Promise<Json[]> {
    return this.pages("run.events", "events", runId);
  }

  /** Every audit record of the run so far, page by page. */
  async records(runId: string): Promise<Json[]> {
    return this.pages("run.audit", "records", runId);
  }

  private async pages(verb: string, field: string, runId: string): Promise<Json[]> {
    const out: Json[] = [];
    let offset: number | undefined = 0;
    while (offset !== undefined) {
      const answer = await this.ask(verb, { run_id: runId, offset });
      out.push(...(answer[field] as Json[]));
      offset = typeof answer.next_offset === "number" ? answer.next_offset : undefined;
    }
    return out;
  }
}

/** The next message of `sub`, or undefined after `ms` milliseconds without one. */
async function next(
  iterator: AsyncIterator<{ data: Uint8Array }>,
  ms: number,
): Promise<Uint8Array | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const idle = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    const got = await Promise.race([iterator.next(), idle]);
    return got === undefined || got.done ? undefined : got.value.data;
  } finally {
    clearTimeout(timer);
  }
}

/** A run.requested event; its run id begins with the login's run_prefix, as the door asks. */
function runRequest(login: Login, scene: string, plan: Json): Json {
  const hex = () => randomUUID().replaceAll("-", "").slice(0, 20);
  const requestId = typeof plan.request_id === "string" ? plan.request_id : `req-${hex()}`;
  return {
    type: "run.requested",
    event_id: randomUUID(),
    at: Date.now() / 1000,
    run_id: `${login.run_prefix}-${hex()}`,
    request_id: requestId,
    thread_id: `thread-${hex()}`,
    user: login.user,
    scene_id: scene,
    plan,
    planner: "plan",
  };
}

/** Submit the request and print the run's events until it ends: the exit status. */
async function follow(door: Door, request: Json, timeoutMs: number): Promise<number> {
  const runId = String(request.run_id);
  // Subscribe first, then read what came before: nothing can be missed.
  const sub: Subscription = door.nc.subscribe(door.feed(runId));
  try {
    await door.ask("run.submit", request);
    const backlog = await door.events(runId);
    const seen = new Set<string>();
    const iterator = sub[Symbol.asyncIterator]();
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      let event = backlog.shift();
      if (event === undefined) {
        const data = await next(iterator, 1000);
        if (data === undefined) continue;
        event = JSON.parse(new TextDecoder().decode(data)) as Json;
      }
      const id = String(event.event_id);
      if (seen.has(id)) continue; // both in the backlog and on the feed
      seen.add(id);
      const type = String(event.type);
      emit("event", { type, event_id: id });
      if (type in ENDED) {
        emit("result", { status: ENDED[type], run_id: runId, event });
        return ENDED[type] === "completed" ? 0 : 1;
      }
      if (type === WAITING) {
        emit("result", { status: "awaiting_confirmation", run_id: runId, event });
        return 3;
      }
    }
    emit("result", { status: "timeout", run_id: runId });
    return 1;
  } finally {
    sub.unsubscribe();
  }
}

/** Print the run's audit records once none has been added for `idleMs` (the audit service
 * records a run as it projects it, normally milliseconds after). */
async function readAudit(door: Door, runId: string, idleMs: number): Promise<void> {
  let records: Json[] = [];
  let still = Date.now();
  while (Date.now() - still < idleMs) {
    const found = await door.records(runId);
    if (found.length !== records.length) {
      records = found;
      still = Date.now();
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  for (const { type: _type, ...record } of records) {
    emit("audit", record);
  }
}

function readLogin(path: string, seedFile: string | undefined): Login {
  const login = JSON.parse(readFileSync(path, "utf8")) as Login;
  const seed = seedFile ? readFileSync(seedFile, "utf8") : (process.env[SEED_ENV] ?? login.seed ?? "");
  login.seed = seed.trim();
  if (!login.seed.startsWith("SU")) {
    throw new Error(`give the user's NKey seed (SU...) in the login file, --seed-file or ${SEED_ENV}`);
  }
  return login;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      login: { type: "string" },
      nats: { type: "string" },
      scene: { type: "string" },
      plan: { type: "string" },
      "seed-file": { type: "string" },
      timeout: { type: "string", default: "300" },
      idle: { type: "string", default: "1.5" },
    },
  });
  const { scene, plan } = values;
  if (!values.login || !scene || !plan) {
    throw new Error("--login, --scene and --plan are required");
  }
  const login = readLogin(values.login, values["seed-file"]);
  const where = new URL(values.nats ?? login.url);
  const nc = await connect({
    servers: `${where.hostname}:${where.port}`,
    // The server's NKey challenge: the seed signs a nonce and never leaves this process.
    authenticator: nkeyAuthenticator(new TextEncoder().encode(login.seed)),
    name: "follow-run-example-ts",
    inboxPrefix: login.inbox_prefix, // the only inbox this login may listen on
  });
  try {
    const door = new Door(nc, login);
    const request = runRequest(login, scene, JSON.parse(readFileSync(plan, "utf8")) as Json);
    const status = await follow(door, request, Number(values.timeout) * 1000);
    await readAudit(door, String(request.run_id), Number(values.idle) * 1000);
    return status;
  } finally {
    await nc.close();
  }
}

main().then(
  (status) => process.exit(status),
  (error: unknown) => {
    process.stderr.write(`follow_run: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  },
);
