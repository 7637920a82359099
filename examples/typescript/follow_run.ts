/**
 * Run a plan on a blendmesh mesh over plain NATS, follow it to its result, tail its audit.
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
 *   BLENDMESH_NKEY_SEED=SUA... npx tsx follow_run.ts \
 *     --nats nats://external:PASSWORD@127.0.0.1:4222 --scene demo --user ana --plan plan.json
 *
 * It logs in as `external` (the password is in the mesh's nats-credentials.json) and signs
 * the request with the user's NKey seed, from --seed-file PATH or BLENDMESH_NKEY_SEED. The
 * mesh's operator registers its public key first: `blendmesh users add ana --key U...`.
 * Exit status: 0 completed, 1 failed, 3 waiting for a person's approval.
 */

import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

import {
  connect,
  consumerOpts,
  headers,
  nkeys,
  type JetStreamClient,
  type JetStreamSubscription,
} from "nats";

// The run's end: the result events, and the one after which a person must answer.
const ENDED: Record<string, string> = {
  "run.completed": "completed",
  "run.failed": "failed",
  "run.plan_rejected": "failed",
};
const WAITING = "run.approval_requested";
const SEED_ENV = "BLENDMESH_NKEY_SEED";

type Json = Record<string, unknown>;

/** A stream's name, as docs/bus.md gives it: the prefix upper-cased, "-" as "_". */
function stream(prefix: string, kind: string): string {
  return `${prefix.toUpperCase().replaceAll("-", "_")}_${kind}`;
}

function emit(kind: string, fields: Json): void {
  process.stdout.write(`${JSON.stringify({ kind, ...fields })}\n`);
}

/** The headers that sign `body` on `subject`: an ed25519 signature of the subject, a
 * newline and the body, by the user's NKey (docs/bus.md, "Who you are"). */
function signed(seed: string, subject: string, body: Uint8Array): Record<string, string> {
  const pair = nkeys.fromSeed(new TextEncoder().encode(seed));
  const signedBytes = Buffer.concat([Buffer.from(`${subject}\n`), body]);
  const signature = Buffer.from(pair.sign(signedBytes)).toString("base64url");
  const signer = pair.getPublicKey();
  pair.clear();
  return { "Blendmesh-Signer": signer, "Blendmesh-Signature": signature };
}

/** An ordered push consumer from the start of `subject`. The mesh refuses consumers
 * without a name (docs/bus.md, "Logging in"), so it gets one. */
async function ordered(
  js: JetStreamClient,
  subject: string,
  streamName: string,
): Promise<JetStreamSubscription> {
  const opts = consumerOpts();
  opts.orderedConsumer();
  opts.deliverAll();
  opts.bindStream(streamName);
  opts.consumerName(`example-${randomUUID().replaceAll("-", "").slice(0, 16)}`);
  return js.subscribe(subject, opts);
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

function runRequest(user: string, scene: string, plan: Json): Json {
  const hex = () => randomUUID().replaceAll("-", "").slice(0, 20);
  const requestId = typeof plan.request_id === "string" ? plan.request_id : `req-${hex()}`;
  return {
    type: "run.requested",
    event_id: randomUUID(),
    at: Date.now() / 1000,
    run_id: `run-${hex()}`,
    request_id: requestId,
    thread_id: `thread-${hex()}`,
    user,
    scene_id: scene,
    plan,
    planner: "plan",
  };
}

/** Publish the signed request and print the run's events until it ends: the exit status.
 * The mesh checks the signature and passes the request on to the run's own subjects. */
async function follow(
  js: JetStreamClient,
  prefix: string,
  request: Json,
  seed: string,
  timeoutMs: number,
): Promise<number> {
  const runId = String(request.run_id);
  // Subscribe first, from the start of the run's subjects: nothing can be missed.
  const sub = await ordered(js, `${prefix}.run.${runId}.*`, stream(prefix, "EVENTS"));
  try {
    const subject = `${prefix}.signed.${runId}.requested`;
    const body = new TextEncoder().encode(JSON.stringify(request));
    const h = headers();
    h.set("Nats-Msg-Id", String(request.event_id));
    for (const [name, value] of Object.entries(signed(seed, subject, body))) {
      h.set(name, value);
    }
    await js.publish(subject, body, { headers: h, expect: { streamName: stream(prefix, "EVENTS") } });
    const iterator = sub[Symbol.asyncIterator]();
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const data = await next(iterator, 1000);
      if (data === undefined) continue;
      const event = JSON.parse(new TextDecoder().decode(data)) as Json;
      const type = String(event.type);
      emit("event", { type, event_id: event.event_id });
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

/** Print the run's audit records from the start of the audit stream, until none has come
 * for `idleMs` (the audit service publishes them as it projects the run). */
async function tailAudit(
  js: JetStreamClient,
  prefix: string,
  runId: string,
  idleMs: number,
): Promise<void> {
  const sub = await ordered(js, `${prefix}.audit.*.*.${runId}`, stream(prefix, "AUDIT"));
  try {
    const iterator = sub[Symbol.asyncIterator]();
    for (;;) {
      const data = await next(iterator, idleMs);
      if (data === undefined) return;
      const { type: _type, ...record } = JSON.parse(new TextDecoder().decode(data)) as Json;
      emit("audit", record);
    }
  } finally {
    sub.unsubscribe();
  }
}

function userSeed(seedFile: string | undefined): string {
  const seed = (seedFile ? readFileSync(seedFile, "utf8") : process.env[SEED_ENV] ?? "").trim();
  if (!seed.startsWith("SU")) {
    throw new Error(`give the user's NKey seed (SU...) in --seed-file or ${SEED_ENV}`);
  }
  return seed;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      nats: { type: "string" },
      prefix: { type: "string", default: "blendmesh" },
      scene: { type: "string" },
      user: { type: "string" },
      plan: { type: "string" },
      "seed-file": { type: "string" },
      inbox: { type: "string", default: "_INBOX.external" },
      timeout: { type: "string", default: "300" },
      idle: { type: "string", default: "3" },
    },
  });
  const { nats: url, scene, user, plan } = values;
  if (!url || !scene || !user || !plan) {
    throw new Error("--nats, --scene, --user and --plan are required");
  }
  const seed = userSeed(values["seed-file"]);
  const where = new URL(url);
  const nc = await connect({
    servers: `${where.hostname}:${where.port}`,
    user: decodeURIComponent(where.username),
    pass: decodeURIComponent(where.password),
    name: "follow-run-example-ts",
    // Replies and deliveries arrive only under the role's own inbox prefix.
    inboxPrefix: values.inbox,
  });
  try {
    const js = nc.jetstream();
    const request = runRequest(user, scene, JSON.parse(readFileSync(plan, "utf8")) as Json);
    const prefix = values.prefix ?? "blendmesh";
    const status = await follow(js, prefix, request, seed, Number(values.timeout) * 1000);
    await tailAudit(js, prefix, String(request.run_id), Number(values.idle) * 1000);
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
