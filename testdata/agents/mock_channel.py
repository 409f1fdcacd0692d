#!/usr/bin/env python3
"""A model channel for the pool's real-agent tests: mock_llm.py that can fail on demand.

Same endpoints, replies and JSONL log as mock_llm.py (imported from this directory), plus:

  --fail-status S   answer model calls (POST /v1/messages, /v1/chat/completions,
                    /v1/responses) with HTTP status S and the API's error document
                    instead of the reply; 0 (default) never fails
  --fail-first N    fail only the first N model calls (0, the default: all of them)

Each logged model call carries "mock_status": the status it was answered with, so a
test can tell the failed attempts from the served ones. Other requests are unaffected.

  python3 mock_channel.py --port 18081 --log /tmp/m1.jsonl --fail-status 529 --fail-first 1
"""
import argparse, sys, threading

import mock_llm

MODEL_CALLS = {"/messages", "/chat/completions", "/responses"}
STATE = {"calls": 0}
DECISION = threading.local()
FAIL = {"status": 0, "first": 0}


def decide(entry):
    """Counts a model call and returns the status to answer it with (200 = serve)."""
    path = entry.get("path", "").split("?")[0]
    p = path[3:] if path.startswith("/v1/") else path
    if entry.get("method") != "POST" or p not in MODEL_CALLS:
        return None
    with mock_llm.LOCK:
        STATE["calls"] += 1
        n = STATE["calls"]
    if FAIL["status"] and (FAIL["first"] == 0 or n <= FAIL["first"]):
        return FAIL["status"]
    return 200


_log = mock_llm.log


def log(entry):
    status = decide(entry)
    DECISION.status = status
    if status is not None:
        entry["mock_status"] = status
    _log(entry)


mock_llm.log = log


def error_doc(status, anthropic):
    """The error document of the API for status (Anthropic or OpenAI shape)."""
    if anthropic:
        kind = {529: "overloaded_error", 429: "rate_limit_error", 401: "authentication_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": "mock channel failing with %d" % status}}
    kind = {429: "rate_limit_exceeded", 401: "invalid_api_key"}.get(status, "server_error")
    return {"error": {"message": "mock channel failing with %d" % status, "type": kind, "param": None, "code": kind}}


class H(mock_llm.H):
    def _failing(self, anthropic):
        status = getattr(DECISION, "status", None)
        DECISION.status = None
        if status is None or status == 200:
            return False
        self._json(status, error_doc(status, anthropic))
        return True

    def anthropic(self, body):
        if not self._failing(True):
            super().anthropic(body)

    def chat(self, body):
        if not self._failing(False):
            super().chat(body)

    def openai_responses(self, body):
        if not self._failing(False):
            super().openai_responses(body)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fail-status", type=int, default=0)
    ap.add_argument("--fail-first", type=int, default=0)
    own, rest = ap.parse_known_args()
    FAIL["status"], FAIL["first"] = own.fail_status, own.fail_first
    mock_llm.H = H  # mock_llm.main builds its server with the module's H
    sys.argv = [sys.argv[0]] + rest
    mock_llm.main()


if __name__ == "__main__":
    main()
