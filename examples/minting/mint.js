// Mints an Entitled customer token (JWT HS256) with Node's standard library only.
//
//     ENTITLED_CUSTOMER_TOKEN_SECRET=… node mint.js USER_ID [SECONDS]
//
// The secret is `customerTokens.secret` of the server's configuration; `sub` is the appUserId (in
// Unicode NFC), `exp` the expiry in seconds, at most `customerTokens.maxLifetimeSeconds` ahead.
"use strict";
const crypto = require("node:crypto");

const b64url = (data) => Buffer.from(data).toString("base64url");

function mint(secret, appUserId, lifetimeSeconds = 3600) {
  const header = b64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
  const exp = Math.floor(Date.now() / 1000) + lifetimeSeconds;
  const payload = b64url(JSON.stringify({ sub: appUserId, exp }));
  const signature = crypto.createHmac("sha256", secret).update(`${header}.${payload}`).digest("base64url");
  return `${header}.${payload}.${signature}`;
}

module.exports = { mint };

if (require.main === module) {
  const lifetime = process.argv[3] ? Number(process.argv[3]) : 3600;
  console.log(mint(process.env.ENTITLED_CUSTOMER_TOKEN_SECRET, process.argv[2], lifetime));
}
