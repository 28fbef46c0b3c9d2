#!/usr/bin/env python3
"""An HCP caller harness written with pika from the HCP L1 specification
(spec/hcp/L1-transport-encoding.md) alone, to check that hcp-edge speaks L1 to
a client that shares none of its code.

It connects with the caller's broker login, declares the L1 topology of a
caller (the hcp.commands and hcp.events exchanges; the durable queue
hcp.evt.{caller_id} bound to hcp.events with {caller_id}.#, with L1's
recommended 24 h message TTL and a drop-head length limit), publishes one
task_submit to hcp.commands with the callee id as routing key and L1's
properties (message_id, timestamp, content_type, content_encoding,
delivery_mode 2, type; correlation_id absent as session_id is null; user_id
set to the login), then consumes its queue with manual ack and prefetch 10:
it checks each message's properties and routing key against L1, skips
redelivered duplicates by message_id and by the L2 sequence
(last_processed_sequence per session), and acks after processing.

It ends at the final message of its task (task_rejected, task_completed,
task_failed, or a session_closed event with final_state ABORTED) and prints
one JSON object on stdout: the submit's message_id, the answer, the
sequences processed in order, the L1 deviations seen, the counts of
duplicates and redeliveries, and the final message. Exit 0 when a final
message arrived, 1 otherwise (the JSON then has "error").

The answer to the submit (task_accepted / task_rejected) is matched by the
hcp-in-reply-to header when present (an hcp-edge extension recorded in its
PROTOCOL-NOTES: L1 itself gives the answer no reference to the submit);
otherwise the first answer on the caller's queue is taken as ours.
"""

import argparse
import datetime
import json
import sys
import time
import uuid
from urllib.parse import unquote, urlparse

import pika

COMMANDS = "hcp.commands"
EVENTS = "hcp.events"
EVENT_TYPES = {"task_accepted", "task_rejected", "event", "task_completed", "task_failed"}


def now_iso():
    t = datetime.datetime.now(datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def build_submit(args):
    """The task_submit envelope: from --task (an envelope whose payload is
    reused) or from --capability and --inputs."""
    if args.task:
        with open(args.task, encoding="utf-8") as f:
            payload = json.load(f)["payload"]
    else:
        payload = {
            "capability": args.capability,
            "intent": "pika caller harness: " + args.capability,
            "inputs": json.loads(args.inputs),
        }
    payload["caller_id"] = args.caller
    return {
        "hcp_version": "1.0",
        "message_id": str(uuid.uuid4()),
        "timestamp": now_iso(),
        "session_id": None,
        "type": "task_submit",
        "payload": payload,
    }


def is_final(env):
    t = env.get("type")
    if t in ("task_rejected", "task_completed", "task_failed"):
        return True
    if t == "event":
        p = env.get("payload") or {}
        data = p.get("data") or {}
        return p.get("event_type") == "session_closed" and str(data.get("final_state", "")).upper() == "ABORTED"
    return False


class Harness:
    def __init__(self, args):
        self.args = args
        self.login = unquote(urlparse(args.url).username or "")
        self.queue = "hcp.evt." + args.caller
        self.result = {
            "login": self.login,
            "queue": self.queue,
            "submit_message_id": None,
            "answer": None,
            "in_reply_to": None,
            "session_id": None,
            "sequences": [],
            "event_types": [],
            "messages": 0,
            "deliveries": 0,
            "redelivered": 0,
            "duplicates": 0,
            "violations": [],
            "publisher_user_ids": [],
            "final": None,
        }
        self.seen_ids = set()  # message_ids processed (L1: dedup on message_id)
        self.last_seq = {}  # session_id -> last_processed_sequence (L2 sequence)
        self.early = {}  # session_id -> messages that came before our answer
        self.ours = None  # our session id once answered

    def violation(self, msg):
        if msg not in self.result["violations"]:
            self.result["violations"].append(msg)

    def check_properties(self, method, props, env):
        """L1's property mapping and routing key on a message of the event channel."""
        t = env.get("type")
        if t not in EVENT_TYPES:
            self.violation("type %r on the event channel" % t)
        if props.content_type != "application/json":
            self.violation("content_type %r" % props.content_type)
        if (props.content_encoding or "").lower() != "utf-8":
            self.violation("content_encoding %r" % props.content_encoding)
        if props.delivery_mode != 2:
            self.violation("delivery_mode %r" % props.delivery_mode)
        if props.message_id != env.get("message_id"):
            self.violation("message_id property %r vs body %r" % (props.message_id, env.get("message_id")))
        if props.type != t:
            self.violation("type property %r vs body %r" % (props.type, t))
        if props.timestamp is None:
            self.violation("no timestamp property")
        sid = env.get("session_id")
        if sid is not None and props.correlation_id != sid:
            self.violation("correlation_id %r vs session_id %r" % (props.correlation_id, sid))
        want = "%s.%s.%s" % (self.args.caller, sid if sid is not None else "none", t)
        if method.exchange != EVENTS:
            self.violation("exchange %r" % method.exchange)
        if method.routing_key != want:
            self.violation("routing key %r, want %r" % (method.routing_key, want))
        for f in ("hcp_version", "message_id", "timestamp", "type", "payload"):
            if f not in env:
                self.violation("envelope without %s" % f)
        if props.user_id and props.user_id not in self.result["publisher_user_ids"]:
            self.result["publisher_user_ids"].append(props.user_id)

    def process(self, env):
        """Processes one message of our session in order. Returns True at the end."""
        sid = env.get("session_id")
        if env.get("type") == "event":
            seq = env["payload"]["sequence"]
            last = self.last_seq.get(sid, 0)
            if seq <= last:
                self.result["duplicates"] += 1
                return False
            if seq != last + 1:
                self.violation("sequence %d after %d" % (seq, last))
            self.last_seq[sid] = seq
            self.result["sequences"].append(seq)
            self.result["event_types"].append(env["payload"].get("event_type"))
        self.result["messages"] += 1
        if is_final(env):
            self.result["final"] = env
            return True
        return False

    def on_message(self, method, props, body):
        """Returns True when the task ended."""
        self.result["deliveries"] += 1
        if method.redelivered:
            self.result["redelivered"] += 1
        try:
            env = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            self.violation("undecodable body: %s" % e)
            return False
        self.check_properties(method, props, env)
        mid = env.get("message_id")
        if mid in self.seen_ids:
            self.result["duplicates"] += 1
            return False
        self.seen_ids.add(mid)
        t = env.get("type")
        sid = env.get("session_id")
        if t in ("task_accepted", "task_rejected") and self.result["answer"] is None:
            irt = (props.headers or {}).get("hcp-in-reply-to")
            if isinstance(irt, bytes):
                irt = irt.decode()
            if irt is None or irt == self.result["submit_message_id"]:
                self.result["answer"] = t
                self.result["in_reply_to"] = irt
                self.result["session_id"] = sid
                self.ours = sid
                if self.process(env):
                    return True
                # Messages of our session that came first (approval_pending
                # precedes task_accepted when a human must approve).
                for early in self.early.pop(sid, []):
                    if self.process(early):
                        return True
                return False
        if self.ours is None:
            if sid is not None:
                self.early.setdefault(sid, []).append(env)
            return False
        if sid != self.ours:
            return False  # another session of this caller: not ours to follow
        return self.process(env)

    def run(self):
        params = pika.URLParameters(self.args.url)
        params.heartbeat = 30
        params.blocked_connection_timeout = 30
        conn = pika.BlockingConnection(params)
        try:
            ch = conn.channel()
            # Passive: on a broker provisioned with the narrowest permissions
            # a caller may not configure (so neither declare nor delete) the
            # shared exchanges; the callee declares them (docs/PROTOCOL-NOTES.md).
            ch.exchange_declare(COMMANDS, exchange_type="direct", durable=True, passive=True)
            ch.exchange_declare(EVENTS, exchange_type="topic", durable=True, passive=True)
            ch.queue_declare(self.queue, durable=True, arguments={
                "x-message-ttl": 24 * 3600 * 1000,
                "x-max-length": 100000,
                "x-overflow": "drop-head",
            })
            ch.queue_bind(self.queue, EVENTS, routing_key=self.args.caller + ".#")
            ch.basic_qos(prefetch_count=10)
            ch.confirm_delivery()

            env = build_submit(self.args)
            self.result["submit_message_id"] = env["message_id"]
            props = pika.BasicProperties(
                content_type="application/json",
                content_encoding="utf-8",
                delivery_mode=2,
                message_id=env["message_id"],
                timestamp=int(time.time()),
                type="task_submit",
                user_id=self.login,
            )
            # mandatory: an unroutable command (no hcp.cmd.{callee_id}) raises.
            ch.basic_publish(COMMANDS, self.args.callee, json.dumps(env).encode("utf-8"), props, mandatory=True)

            deadline = time.monotonic() + self.args.timeout
            for method, props, body in ch.consume(self.queue, auto_ack=False, exclusive=False, inactivity_timeout=1):
                if method is not None:
                    done = self.on_message(method, props, body)
                    ch.basic_ack(method.delivery_tag)  # after processing (L1's ACK strategy)
                    if done:
                        break
                if time.monotonic() > deadline:
                    raise TimeoutError("no final message within %ss" % self.args.timeout)
            ch.cancel()
        finally:
            conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="amqp://login:password@host:port/vhost of the caller")
    ap.add_argument("--callee", required=True, help="callee_id: routing key on hcp.commands")
    ap.add_argument("--caller", required=True, help="caller_id: queue hcp.evt.{caller_id}")
    ap.add_argument("--capability", default="rig-status")
    ap.add_argument("--inputs", default="{}", help="inputs object (JSON)")
    ap.add_argument("--task", help="a task_submit envelope whose payload to send instead")
    ap.add_argument("--timeout", type=float, default=60, help="seconds to wait for the final message")
    args = ap.parse_args()
    h = Harness(args)
    code = 0
    try:
        h.run()
    except Exception as e:  # reported in the JSON for the Go test
        h.result["error"] = "%s: %s" % (type(e).__name__, e)
        code = 1
    if h.result["final"] is None and "error" not in h.result:
        h.result["error"] = "no final message"
        code = 1
    json.dump(h.result, sys.stdout)
    sys.stdout.write("\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
