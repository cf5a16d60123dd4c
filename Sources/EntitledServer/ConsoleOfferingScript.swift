/// The console script's offerings pages (part of `/console/console.js`, see ``ConsoleScript``):
/// the list with the current offering and the targeting rules, one offering (packages, metadata,
/// version history) and its changes — create, replace, delete, make current — through the admin
/// API (`/v1/offerings`, docs/offerings.md). Reading them needs an `admin` key, as the API does.
enum ConsoleOfferingScript {
    static let js = #"""
          // ---- offerings ----
          // The editable part of an offering, as `PUT /v1/offerings/{id}` takes it.
          const offeringDocument = (o) => ({ description: o.description, metadata: o.metadata || {}, packages: o.packages });
          const packageTable = (packages) => el("table", { id: "offering-packages" },
            el("tr", {}, ["Package", "App Store product", "Google Play product"].map((h) => el("th", { text: h }))),
            packages.map((p) => el("tr", {}, el("td", { text: p.id }), el("td", { text: p.products.appStore || "—" }),
              el("td", { text: p.products.playStore || "—" }))));

          // A form that PUTs the JSON in its text area as offering `id` (a new one when `id` is null).
          function offeringForm(id, document, done) {
            const idInput = id === null ? el("input", { id: "offering-id", placeholder: "offering id, e.g. default", required: true, size: 30 }) : null;
            const text = el("textarea", { id: "offering-json", rows: 14, cols: 90, spellcheck: "false" });
            text.value = JSON.stringify(document, null, 2);
            const error = el("p", { class: "error", id: "offering-error" });
            const form = el("form", { id: "offering-form", onsubmit: async (e) => {
              e.preventDefault();
              error.textContent = "";
              let body;
              try { body = JSON.parse(text.value); } catch (x) { error.textContent = "Not JSON: " + x.message; return; }
              const target = id === null ? idInput.value.trim() : id;
              try {
                await api("/v1/offerings/" + encodeURIComponent(target), "PUT", body);
                done(target);
              } catch (x) { error.textContent = String(x.message); }
            } }, idInput, el("div", {}, text), el("button", { type: "submit", text: id === null ? "Create" : "Save (replaces it)" }), error);
            return form;
          }

          async function makeCurrent(id) {
            await api("/v1/offerings/current", "PUT", { offeringId: id });
            route();
          }

          async function offerings(page, id) {
            const me = await session();
            page.append(el("h1", { text: id ? "Offering " + id : "Offerings" }));
            if (!me.admin) {
              page.append(nothingYet("offerings-admin", "Offerings are managed with an admin key (this key has the console scope only)."));
              return;
            }
            const [list, targeting] = await Promise.all([api("/v1/offerings"), api("/v1/targeting")]);
            if (id) return offering(page, id, list, targeting, await api(`/v1/offerings/${encodeURIComponent(id)}/history`));
            page.append(el("p", { class: "muted", text: "What the paywall sells, decided by the server: GET /v1/customers/{appUserId}/offerings " +
              "answers the offering a targeting rule chooses, else the current one (docs/offerings.md). Version " + list.version + "." }));
            const rows = list.offerings.map((o) => el("tr", {},
              el("td", {}, el("a", { href: "#offerings/" + encodeURIComponent(o.id), text: o.id })),
              el("td", { text: o.description || "" }), el("td", { text: o.packages.map((p) => p.id).join(", ") }),
              el("td", { text: o.version }), el("td", { text: when(o.updatedAt) }),
              el("td", {}, o.id === list.currentOfferingId ? el("strong", { class: "ok", text: "current" })
                : el("button", { type: "button", class: "make-current", "data-id": o.id, text: "Make current", onclick: () => makeCurrent(o.id) }))));
            page.append(el("div", { class: "panel" }, el("table", { id: "offering-list" },
              el("tr", {}, ["Offering", "Description", "Packages", "Version", "Changed", ""].map((h) => el("th", { text: h }))), rows),
              rows.length ? null : nothingYet("offerings-empty", "No offering yet: create one below, then make it current.")));
            const ruleRows = targeting.rules.map((r) => el("tr", {}, el("td", { text: r.id }),
              el("td", {}, el("code", { text: JSON.stringify(r.when || {}) })), el("td", { text: r.offeringId })));
            page.append(el("div", { class: "panel" }, el("h2", { text: "Targeting rules (first match wins)" }),
              el("table", { id: "targeting-rules" }, el("tr", {}, ["Rule", "When", "Offering"].map((h) => el("th", { text: h }))), ruleRows),
              ruleRows.length ? null : el("p", { class: "muted", text: "No rule: every customer sees the current offering. Set them with PUT /v1/targeting." })));
            const template = { description: "", metadata: { title: "" }, packages: [{ id: "$monthly", products: { appStore: "" } }] };
            page.append(el("div", { class: "panel" }, el("h2", { text: "New offering" }),
              offeringForm(null, template, (created) => { location.hash = "#offerings/" + encodeURIComponent(created); })));
          }

          const changeKinds = { offering: "created or replaced", current: "made current", offeringDeleted: "deleted" };
          function historyPanel(history) {
            const rows = history.changes.map((c) => el("tr", {}, el("td", { text: c.version }), el("td", { text: changeKinds[c.kind] || c.kind }),
              el("td", { text: c.actor || "the configuration" }), el("td", { text: when(c.changedAt) }),
              el("td", { text: c.offering ? (c.offering.packages || []).map((p) => p.id).join(", ") : "" })));
            return el("div", { class: "panel" }, el("h2", { text: "Version history (newest first)" }),
              el("table", { id: "offering-history" }, el("tr", {}, ["Version", "Change", "By", "When", "Packages"].map((h) => el("th", { text: h }))), rows));
          }

          function offering(page, id, list, targeting, history) {
            const o = list.offerings.find((x) => x.id === id);
            if (!o) { page.append(el("p", { class: "error", id: "offering-missing", text: "No offering " + id + "." }), el("a", { href: "#offerings", text: "← Offerings" })); return; }
            const current = o.id === list.currentOfferingId;
            const rules = targeting.rules.filter((r) => r.offeringId === id).map((r) => r.id);
            page.append(el("p", {}, el("a", { href: "#offerings", text: "← Offerings" })),
              el("div", { class: "panel", id: "offering-summary" },
                el("p", { text: (o.description || "No description") }),
                el("p", { class: "muted", id: "offering-version", text: "Version " + o.version + ", changed " + when(o.updatedAt) + " (offerings at version " + list.version + "). " +
                  (current ? "This is the current offering." : "Not current.") + (rules.length ? " Shown by the rules " + rules.join(", ") + "." : "") }),
                current ? null : el("button", { type: "button", id: "offering-make-current", text: "Make current", onclick: () => makeCurrent(id) })),
              el("div", { class: "panel" }, el("h2", { text: "Packages, in the paywall's order" }), packageTable(o.packages)),
              el("div", { class: "panel" }, el("h2", { text: "Metadata" }), el("pre", { id: "offering-metadata", text: JSON.stringify(o.metadata || {}, null, 2) })),
              historyPanel(history));
            const error = el("p", { class: "error", id: "offering-delete-error" });
            // The API refuses these deletes (OFFERING_IN_USE): say why instead of asking it.
            const inUse = current ? "It is the current offering: make another one current before deleting it."
              : rules.length ? "The rules " + rules.join(", ") + " show it: change them before deleting it." : null;
            page.append(el("div", { class: "panel" }, el("h2", { text: "Change" }),
              el("p", { class: "muted", text: "Saving replaces the offering as a new version; customers see it at once on this server, within a second on the others." }),
              offeringForm(id, offeringDocument(o), () => route()),
              el("h2", { text: "Delete" }),
              inUse ? el("p", { class: "muted", id: "offering-delete-note", text: inUse }) : null,
              el("button", { type: "button", id: "offering-delete", text: "Delete " + id, disabled: !!inUse, onclick: async () => {
                if (!confirm("Delete the offering " + id + "?")) return;
                try { await api("/v1/offerings/" + encodeURIComponent(id), "DELETE"); location.hash = "#offerings"; }
                catch (x) { error.textContent = String(x.message); }
              } }), error));
          }

"""#
}
