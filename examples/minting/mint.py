"""Mints an Entitled customer token (JWT HS256) with the standard library only.

    ENTITLED_CUSTOMER_TOKEN_SECRET=… python3 mint.py USER_ID [SECONDS]

The secret is `customerTokens.secret` of the server's configuration; `sub` is the appUserId (in
Unicode NFC), `exp` the expiry in seconds, at most `customerTokens.maxLifetimeSeconds` ahead.
"""
import base64
import hashlib
import hmac
import json
import os
import sys
import time


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def mint(secret: str, app_user_id: str, lifetime_seconds: int = 3600) -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    claims = {"sub": app_user_id, "exp": int(time.time()) + lifetime_seconds}
    payload = b64url(json.dumps(claims, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    signing_input = f"{header}.{payload}".encode("ascii")
    signature = hmac.new(secret.encode("utf-8"), signing_input, hashlib.sha256).digest()
    return f"{header}.{payload}.{b64url(signature)}"


if __name__ == "__main__":
    lifetime = int(sys.argv[2]) if len(sys.argv) > 2 else 3600
    print(mint(os.environ["ENTITLED_CUSTOMER_TOKEN_SECRET"], sys.argv[1], lifetime))
