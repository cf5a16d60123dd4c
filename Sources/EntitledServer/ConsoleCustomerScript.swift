/// The console script's customer pages (part of `/console/console.js`, see ``ConsoleScript``):
/// the search by id or by order id (Apple's Look Up Order ID), and one customer's answer,
/// attributes, timeline, webhook deliveries and support actions (extend, refund lookup; `admin` keys only).
enum ConsoleCustomerScript {
    static let js = #"""
          // ---- customers ----
          function searchForm(query, byOrder) {
            const input = el("input", { id: "search", type: "search", value: query || "", size: 50,
              placeholder: byOrder ? "Order id from the customer's receipt email" : "appUserId, appAccountToken, originalTransactionId, transactionId or an attribute value (an email)" });
            const by = select([["ids", "by id"], ["order", "by order id (asks Apple)"]], byOrder ? "order" : "ids", () => {});
            by.id = "search-by";
            const form = el("form", { class: "controls", onsubmit: (e) => {
              e.preventDefault();
              location.hash = (by.value === "order" ? "#orders/" : "#customers/") + encodeURIComponent(input.value.trim());
            } }, by, input, el("button", { type: "submit", text: "Search" }));
            return form;
          }

          function customerTable(list) {
            const rows = list.map((c) => el("tr", {},
              el("td", {}, c.appUserId ? el("a", { href: "#customer/" + encodeURIComponent(c.appUserId), text: c.appUserId })
                : el("span", { class: "muted unlinked", text: "unlinked: subscription " + c.originalTransactionId + " has no customer yet (bought without an appAccountToken)" })),
              el("td", { text: c.appAccountToken || "" }), el("td", { text: when(c.createdAt) })));
            return [el("table", { id: "customer-list" },
              el("tr", {}, el("th", { text: "appUserId" }), el("th", { text: "appAccountToken" }), el("th", { text: "Created" })), rows),
              rows.length ? null : el("p", { class: "muted empty", id: "customers-empty", text: "No customer matches. Search by appUserId, " +
                "appAccountToken, originalTransactionId or transactionId (the beginning of an id is enough), or by an order id from the customer's " +
                "receipt email; a customer appears once your app posts a transaction or Apple's notification names their appAccountToken." })];
          }

          async function customers(page, query, after) {
            page.append(el("h1", { text: "Customers" }), searchForm(query, false));
            const body = await api(`/v1/console/customers?limit=25&q=${encodeURIComponent(query || "")}` + (after ? "&after=" + encodeURIComponent(after) : ""));
            page.append(el("div", { class: "panel" }, customerTable(body.customers),
              body.nextAfter ? el("p", {}, el("a", { href: `#customers/${encodeURIComponent(query || "")}/${encodeURIComponent(body.nextAfter)}`, text: "Next page →" })) : null));
          }

          // An order id: Apple says which transactions it billed; the ledger says whose they are.
          async function orders(page, orderId) {
            page.append(el("h1", { text: "Customers" }), searchForm(orderId, true));
            if (!orderId) return;
            let body;
            try {
              body = await api("/v1/console/customers?orderId=" + encodeURIComponent(orderId));
            } catch (error) {
              const why = error.code === "SERVER_API_NOT_CONFIGURED"
                ? "Order-id search asks Apple's App Store Server API, and no app has serverAPI configured (see docs/configuration.md)."
                : String(error.message);
              page.append(el("p", { class: "error", id: "order-error", text: why }));
              return;
            }
            const order = body.order;
            page.append(el("div", { class: "panel", id: "order" },
              el("h2", { text: "Order " + order.orderId }),
              el("p", {}, "Apple: ", el("strong", { id: "order-status", text: order.status === "valid" ? "valid order" : "no such order" })),
              el("table", { id: "order-transactions" },
                el("tr", {}, ["Transaction", "Original transaction", "Product", "Purchased", "Environment", "Customer"].map((h) => el("th", { text: h }))),
                order.transactions.map((t) => el("tr", {}, el("td", { text: t.transactionId || "" }), el("td", { text: t.originalTransactionId || "" }),
                  el("td", { text: t.productId || "" }), el("td", { text: when(t.purchaseDate) }), el("td", { text: t.environment || "" }),
                  el("td", {}, t.appUserId ? el("a", { href: "#customer/" + encodeURIComponent(t.appUserId), text: t.appUserId })
                                           : el("span", { class: "muted", text: "nobody here" + (t.learned ? " (just added to the ledger)" : "") })))))));
            page.append(el("div", { class: "panel" }, el("h2", { text: "Customers" }), customerTable(body.customers)));
          }

          // ---- one customer ----
          async function customer(page, id) {
            const [answer, timeline, me] = await Promise.all([
              api("/v1/customers/" + encodeURIComponent(id)), api(`/v1/console/customers/${encodeURIComponent(id)}/timeline`), session()]);
            // After the answer, which creates a customer never seen (so this finds it).
            const attributes = await api(`/v1/customers/${encodeURIComponent(id)}/attributes`);
            page.append(el("h1", { text: "Customer " + id }));
            const ents = Object.entries(answer.entitlements || {}).map(([name, e]) => el("tr", {}, el("td", { text: name }),
              el("td", { text: e.status }), el("td", { text: e.productId || "" }), el("td", { text: when(e.expiresAt) })));
            const subs = (answer.subscriptions || []).map((s) => {
              const c = s.current || {};
              return el("tr", {}, el("td", { text: s.subscriptionGroup }), el("td", { text: c.productId || "" }), el("td", { text: c.status || s.state || "" }),
                el("td", { text: c.periodType || "" }), el("td", { text: when(c.expiresAt) }), el("td", { text: c.willRenew === false ? "off" : "on" }),
                el("td", { text: c.originalTransactionId || "" }));
            });
            page.append(el("div", { class: "panel" }, el("h2", { text: "Answer" }),
              el("p", {}, "State: ", el("strong", { id: "customer-state", text: answer.state || "" }),
                " · next change: " + when(answer.nextChangeAt) + " · appAccountToken " + (answer.appAccountToken || "")),
              el("table", { id: "answer-entitlements" }, el("tr", {}, ["Entitlement", "Status", "Product", "Expires"].map((h) => el("th", { text: h }))), ents)));
            page.append(el("div", { class: "panel" }, el("h2", { text: "Subscriptions" }),
              el("table", {}, el("tr", {}, ["Group", "Product", "Status", "Period", "Expires", "Auto-renew", "originalTransactionId"].map((h) => el("th", { text: h }))), subs)));
            const attrs = Object.entries(attributes.attributes || {}).sort(([a], [b]) => a < b ? -1 : 1)
              .map(([name, a]) => el("tr", {}, el("td", { text: name }), el("td", { text: a.value }), el("td", { text: when(a.updatedAt) })));
            page.append(el("div", { class: "panel", id: "attributes" }, el("h2", { text: "Attributes" }),
              attrs.length ? el("table", { id: "attribute-list" }, el("tr", {}, ["Name", "Value", "Set"].map((h) => el("th", { text: h }))), attrs)
                : el("p", { class: "muted", text: "No attribute: the app sets them with PUT /v1/customers/{appUserId}/attributes." })));
            page.append(grantPanel(id, me));
            page.append(supportPanel(id, answer, timeline, me));
            const events = timeline.events.map((ev) => {
              const raw = el("pre", { hidden: true, text: ev.raw.map((r) => { try { return JSON.stringify(JSON.parse(r), null, 2); } catch (e) { return r; } }).join("\n\n") });
              return el("tr", { class: "event" }, el("td", { text: when(ev.at) }), el("td", {}, el("span", { class: "event-text", text: ev.text }), raw),
                el("td", { class: "muted", text: ev.kind + " · " + ev.environment }),
                el("td", {}, el("button", { type: "button", text: "raw", onclick: () => { raw.hidden = !raw.hidden; } })));
            });
            page.append(el("div", { class: "panel" }, el("h2", { text: "Timeline" }),
              el("table", { id: "timeline" }, el("tr", {}, ["When (your time)", "What happened", "Kind", ""].map((h) => el("th", { text: h }))), events),
              events.length ? null : el("p", { class: "muted empty", id: "timeline-empty", text: "Nothing stored for this customer yet: their " +
                "purchases arrive when the app posts its transactions (EntitledKit) or when Apple's notifications name their appAccountToken." })));
            page.append(el("div", { class: "panel", id: "deliveries" }, el("h2", { text: "Webhook deliveries" }),
              timeline.deliveries.length ? null : el("p", { class: "muted", text: "No webhook delivery for this customer." }),
              el("table", {}, el("tr", {}, ["Event", "Endpoint", "Status", "Attempts", "Last attempt", "Last answer"].map((h) => el("th", { text: h }))),
                timeline.deliveries.map((d) => el("tr", {}, el("td", { text: d.eventType }), el("td", { text: d.endpoint }), el("td", { text: d.status }),
                  el("td", { text: d.attempts }), el("td", { text: when(d.lastAttemptAt) }), el("td", { text: d.lastError || (d.lastStatus === null ? "" : String(d.lastStatus)) }))))));
          }

          // A promotional grant (`POST /v1/customers/{id}/grants`, admin keys): the entitlement for a
          // number of days without a purchase; the page is drawn again to show it in the answer.
          function grantPanel(id, me) {
            const panel = el("div", { class: "panel", id: "grant" }, el("h2", { text: "Grant an entitlement" }));
            const why = !me.admin ? "Granting needs an API key with the admin scope (this key is read-only)."
                      : !me.entitlements.length ? "No configured product gives an entitlement." : null;
            if (why) panel.append(el("p", { class: "muted", id: "grant-disabled", text: why }));
            const entitlement = select(me.entitlements.map((e) => [e, e]), me.entitlements[0], () => {});
            entitlement.id = "grant-entitlement";
            const days = el("input", { id: "grant-days", type: "number", min: 1, max: 3650, value: 7, size: 4, required: true });
            const reason = el("input", { id: "grant-reason", type: "text", maxlength: 500, size: 30, placeholder: "reason (recorded with the grant)" });
            const result = el("div", { id: "grant-result" });
            if (state.flash) { result.append(el("p", { class: "ok", id: "grant-done", text: state.flash })); delete state.flash; }
            const button = el("button", { type: "submit", id: "grant-button", text: "Grant entitlement", disabled: !!why });
            const form = el("form", { class: "controls", onsubmit: async (event) => {
              event.preventDefault();
              button.disabled = true;
              result.replaceChildren();
              try {
                const body = { entitlement: entitlement.value, days: Number(days.value) };
                if (reason.value.trim()) body.reason = reason.value.trim();
                const grant = await api(`/v1/customers/${encodeURIComponent(id)}/grants`, "POST", body);
                state.flash = `Granted ${grant.entitlement} until ${when(grant.expiresAt)} (grant ${grant.grantId}).`;
                await route();
              } catch (error) {
                result.append(el("p", { class: "error", id: "grant-error", text: String(error.message) }));
                button.disabled = false;
              }
            } }, entitlement, "for", days, "days", reason, button);
            panel.append(form, result, el("p", { class: "muted note", text: "A grant never hides a purchase: the answer shows the purchase while it " +
              "gives access, and the grant after it lapses. End a grant with DELETE /v1/customers/{appUserId}/grants/{grantId}." }));
            return panel;
          }

          // A fresh requestIdentifier (a UUID) per extension: Apple applies one identifier once.
          function uuid() {
            const b = crypto.getRandomValues(new Uint8Array(16));
            b[6] = (b[6] & 0x0f) | 0x40; b[8] = (b[8] & 0x3f) | 0x80;
            const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
            return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
          }

          // Extend and refund lookup through the admin endpoints; shown disabled, with the reason,
          // to a console key or without serverAPI. Every action is recorded (the table below).
          function supportPanel(id, answer, timeline, me) {
            const panel = el("div", { class: "panel", id: "support" }, el("h2", { text: "Support actions" }));
            const why = !me.serverAPIApps.length ? "No app has serverAPI configured: Apple cannot be asked."
                      : !me.admin ? "Support actions need an API key with the admin scope (this key is read-only)." : null;
            if (why) panel.append(el("p", { class: "muted", id: "support-disabled", text: why }));
            const otids = [...new Set((answer.subscriptions || []).map((s) => (s.current || {}).originalTransactionId).filter(Boolean))];
            const app = me.serverAPIApps.length > 1 ? select(me.serverAPIApps.map((b) => [b, b]), me.serverAPIApps[0], () => {}) : null;
            const q = () => app ? "?bundleId=" + encodeURIComponent(app.value) : "";
            const result = el("div", { id: "support-result" });
            const subject = select(otids.map((o) => [o, o]), otids[0], () => {});
            subject.id = "support-subject";
            const days = el("input", { id: "extend-days", type: "number", min: 1, max: 90, value: 7, size: 4 });
            const reason = select([[0, "Undeclared"], [1, "Customer satisfaction"], [2, "Other"], [3, "Service issue or outage"]], 1, () => {});
            reason.id = "extend-reason";
            const off = !!why || !otids.length;
            const run = async (button, action) => {
              button.disabled = true;
              result.replaceChildren();
              try { result.append(await action()); } catch (error) { result.append(el("p", { class: "error", text: String(error.message) })); }
              button.disabled = false;
            };
            const extend = el("button", { type: "button", id: "extend", text: "Extend renewal date", disabled: off, onclick: () => run(extend, async () => {
              const body = await api(`/v1/subscriptions/${encodeURIComponent(subject.value)}/extend` + q(), "POST",
                { days: Number(days.value), reason: Number(reason.value), requestIdentifier: uuid() });
              return el("p", { class: "ok", id: "extend-done", text: `Extended; Apple's new renewal date: ${when(body.effectiveDate)}.` });
            }) });
            const refunds = el("button", { type: "button", id: "refunds", text: "Look up refunds", disabled: off, onclick: () => run(refunds, async () => {
              const body = await api(`/v1/subscriptions/${encodeURIComponent(subject.value)}/refunds` + q());
              if (!body.refunds.length) return el("p", { id: "refunds-none", text: "Apple has no refund for this subscription." });
              return el("table", { id: "refund-list" }, el("tr", {}, ["Transaction", "Product", "Refunded", "Reason"].map((h) => el("th", { text: h }))),
                body.refunds.map((r) => el("tr", {}, el("td", { text: r.transactionId || "" }), el("td", { text: r.productId || "" }),
                  el("td", { text: r.revocationDate ? when(new Date(r.revocationDate).toISOString()) : "" }), el("td", { text: String(r.revocationReason ?? "") }))));
            }) });
            panel.append(el("div", { class: "controls" }, app, subject, "by", days, "days,", reason, extend, refunds), result);
            if (!otids.length) panel.append(el("p", { class: "muted", text: "This customer has no subscription." }));
            panel.append(el("h2", { text: "Recorded support actions" }),
              el("table", { id: "support-actions" }, el("tr", {}, ["When", "Action", "Subject", "Key", "Outcome"].map((h) => el("th", { text: h }))),
                timeline.supportActions.map((a) => el("tr", {}, el("td", { text: when(a.at) }), el("td", { text: a.action }), el("td", { text: a.subject }),
                  el("td", { text: a.actor }), el("td", { text: a.detail.outcome || "" })))));
            if (!timeline.supportActions.length) panel.append(el("p", { class: "muted", text: "None yet." }));
            return panel;
          }


"""#
}
