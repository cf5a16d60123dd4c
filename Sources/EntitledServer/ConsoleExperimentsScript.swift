/// The console's experiments pages (part of `/console/console.js`, see ``ConsoleScript``): the
/// experiments from `GET /v1/experiments` and, with an `admin` key, a form that creates one; one
/// experiment's variants, audience and status, its changes — weights and audience edited, paused,
/// resumed, ended — through `PUT /v1/experiments/{experimentId}` (the server's problem shown when
/// it refuses), and its results per variant and horizon from `GET /v1/experiments/{experimentId}/results`,
/// with their intervals and a plain "not enough data" below the threshold.
enum ConsoleExperimentsScript {
    static let js = #"""
          // ---- experiments ----
          const audienceStates = ["new", "active", "inactive", "trialUsed", "billingRetry"];
          const listConditions = [["storefronts", "Storefronts (alpha-3, e.g. USA, FRA)"], ["platforms", "Platforms (ios, android, …)"],
            ["locales", "Locales (en, pt_BR, …)"]];
          const share = (variants, v) => (100 * v.weight / variants.reduce((a, x) => a + x.weight, 0)).toFixed(1) + " %";

          // The audience's conditions, as targeting takes them, in words.
          function audienceText(audience) {
            const a = audience || {}, parts = [];
            for (const [name, label] of listConditions) if (a[name] && a[name].length) parts.push(label.split(" (")[0] + ": " + a[name].join(", "));
            if (a.states && a.states.length) parts.push("States: " + a.states.join(", "));
            if (a.minAppVersion) parts.push("App version ≥ " + a.minAppVersion);
            if (a.maxAppVersion) parts.push("App version ≤ " + a.maxAppVersion);
            for (const [k, v] of Object.entries(a.attributes || {})) parts.push("Attribute " + k + " = " + v);
            return parts.length ? parts.join(" · ") : "Every customer";
          }

          // Inputs for an audience (every condition optional, all given must hold); `read()` gives
          // the object `PUT /v1/experiments/{id}` takes, or throws a message.
          function audienceForm(audience) {
            const a = audience || {};
            const lists = listConditions.map(([name, label]) => [name, el("input", { id: "audience-" + name, size: 40, placeholder: "comma-separated, empty: any" }), label]);
            for (const [name, input] of lists) input.value = (a[name] || []).join(", ");
            const states = audienceStates.map((s) => [s, el("input", { type: "checkbox", id: "audience-state-" + s, checked: (a.states || []).includes(s) })]);
            const min = el("input", { id: "audience-minAppVersion", size: 12, placeholder: "e.g. 2.1" });
            const max = el("input", { id: "audience-maxAppVersion", size: 12, placeholder: "e.g. 3.0" });
            min.value = a.minAppVersion || ""; max.value = a.maxAppVersion || "";
            const attributes = el("textarea", { id: "audience-attributes", rows: 3, cols: 40, spellcheck: "false", placeholder: "key=value, one a line" });
            attributes.value = Object.entries(a.attributes || {}).map(([k, v]) => k + "=" + v).join("\n");
            const row = (label, ...inputs) => el("tr", {}, el("th", { text: label }), el("td", {}, ...inputs));
            const node = el("table", { class: "audience-form" },
              lists.map(([, input, label]) => row(label, input)),
              row("States (any of them; none: any)", states.map(([s, box]) => el("label", {}, box, " " + s + " "))),
              row("App version", "from ", min, " to ", max),
              row("Attributes (exact values)", attributes));
            function read() {
              const out = {};
              for (const [name, input] of lists) {
                const values = input.value.split(",").map((x) => x.trim()).filter((x) => x);
                if (values.length) out[name] = values;
              }
              const chosen = states.filter(([, box]) => box.checked).map(([s]) => s);
              if (chosen.length) out.states = chosen;
              if (min.value.trim()) out.minAppVersion = min.value.trim();
              if (max.value.trim()) out.maxAppVersion = max.value.trim();
              const pairs = attributes.value.split("\n").map((x) => x.trim()).filter((x) => x);
              if (pairs.length) {
                out.attributes = {};
                for (const pair of pairs) {
                  const at = pair.indexOf("=");
                  if (at < 1) throw new Error("An attribute is key=value: " + pair);
                  out.attributes[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
                }
              }
              return out;
            }
            return { node, read };
          }

          // Variant rows: an offering and a weight each. New experiments choose the offerings (2…10,
          // rows added and removed); an existing one changes only its weights (`locked`).
          function variantsForm(variants, offeringIds, locked) {
            const body = el("tbody", {});
            const rows = [];
            function add(v) {
              const offering = locked ? el("span", { class: "variant-offering", text: v.offeringId })
                : el("select", { class: "variant-offering" }, offeringIds.map((id) => el("option", { value: id, text: id, selected: id === v.offeringId })));
              const weight = el("input", { class: "variant-weight", type: "number", min: 1, max: 1000000, step: 1, required: true, size: 8 });
              weight.value = String(v.weight);
              const row = { offering, weight, tr: null };
              row.tr = el("tr", {}, el("td", { text: String(rows.length) }), el("td", {}, offering), el("td", {}, weight),
                locked ? null : el("td", {}, el("button", { type: "button", class: "variant-remove", text: "Remove", onclick: () => {
                  if (rows.length <= 2) return;
                  rows.splice(rows.indexOf(row), 1); row.tr.remove();
                  rows.forEach((r, i) => { r.tr.firstChild.textContent = String(i); });
                } })));
              rows.push(row); body.append(row.tr);
            }
            variants.forEach(add);
            const node = el("div", {}, el("table", { id: "variant-rows" },
              el("thead", {}, el("tr", {}, ["Variant", "Offering", "Weight (share = weight ÷ their sum)", ""].map((h) => el("th", { text: h })))), body),
              locked ? el("p", { class: "muted", text: "A variant's offering cannot change once created (its results would mix two paywalls): " +
                "only the weights can. Create a new experiment to compare other offerings." })
                : el("button", { type: "button", id: "variant-add", text: "Add a variant", onclick: () => {
                  if (rows.length < 10) add({ offeringId: offeringIds[rows.length % offeringIds.length], weight: 1 });
                } }));
            const read = () => rows.map((r) => ({ offeringId: locked ? r.offering.textContent : r.offering.value, weight: Number(r.weight.value) }));
            return { node, read };
          }

          // PUTs `body` as experiment `id`, then `done`; a refusal shows the server's problem in `error`.
          async function putExperiment(id, body, error, done) {
            error.textContent = "";
            try { await api("/v1/experiments/" + encodeURIComponent(id), "PUT", body); }
            catch (x) { error.textContent = String(x.message); return; }
            done();
          }

          // A form whose submit PUTs its variants and audience with `status()` as experiment `id()`.
          function experimentForm(formId, variants, audience, status, id, error, done, ...children) {
            return el("form", { id: formId, onsubmit: async (e) => {
              e.preventDefault();
              let body;
              try { body = { variants: variants.read(), audience: audience.read(), status: status() }; }
              catch (x) { error.textContent = x.message; return; }
              await putExperiment(id(), body, error, () => done(id()));
            } }, ...children, error);
          }

          async function experiments(page, id) {
            const me = await session();
            if (id) return experiment(page, id, me);
            const body = await api("/v1/experiments");
            page.append(el("h1", { text: "Experiments" }), el("p", { class: "muted", text: "Offerings split between an audience by weight: " +
              "each customer's variant is fixed at their first paywall read (docs/offerings.md#5-experiment)." }));
            if (!body.experiments.length) page.append(nothingYet("experiments-empty", me.admin ? "No experiment yet: create one below from two offerings or more."
              : "No experiment yet. Creating one takes an admin key (this key has the console scope only)."));
            else page.append(el("table", { id: "experiments" }, el("tr", {}, ["Experiment", "Status", "Variants", "Audience", "Changed"].map((h) => el("th", { text: h }))),
              body.experiments.map((x) => el("tr", {}, el("td", {}, el("a", { href: "#experiments/" + encodeURIComponent(x.id), text: x.id })),
                el("td", { text: x.status }), el("td", { text: x.variants.map((v) => v.offeringId + " (" + share(x.variants, v) + ")").join(", ") }),
                el("td", { text: audienceText(x.audience) }), el("td", { text: when(x.updatedAt) })))));
            if (!me.admin) return;
            const offeringIds = (await api("/v1/offerings")).offerings.map((o) => o.id);
            if (offeringIds.length < 2) {
              page.append(nothingYet("experiments-offerings", "An experiment compares two offerings or more: create them first on the Offerings page."),
                el("a", { href: "#offerings", text: "Offerings →" }));
              return;
            }
            const idInput = el("input", { id: "experiment-id", placeholder: "experiment id, e.g. spring-prices", required: true, size: 30 });
            const variants = variantsForm(offeringIds.slice(0, 2).map((o) => ({ offeringId: o, weight: 1 })), offeringIds, false);
            const audience = audienceForm({});
            const status = select([["paused", "Paused: a draft, enrols no one until resumed"], ["running", "Running: enrols customers now"]], "paused", () => {});
            status.id = "experiment-status";
            const error = el("p", { class: "error", id: "experiment-error" });
            page.append(el("div", { class: "panel" }, el("h2", { text: "New experiment" }),
              experimentForm("experiment-form", variants, audience, () => status.value, () => idInput.value.trim(), error,
                (created) => { location.hash = "#experiments/" + encodeURIComponent(created); },
                el("p", {}, idInput), el("h3", { text: "Variants" }), variants.node, el("h3", { text: "Audience" }), audience.node,
                el("p", {}, status), el("button", { type: "submit", text: "Create" }))));
          }

          async function experiment(page, id, me) {
            const path = "/v1/experiments/" + encodeURIComponent(id);
            const [x, body] = await Promise.all([api(path), api(path + "/results")]);
            page.append(el("p", {}, el("a", { href: "#experiments", text: "← Experiments" })), el("h1", { text: "Experiment " + x.id }));
            page.append(el("div", { class: "panel", id: "experiment-summary" },
              el("p", {}, "Status: ", el("strong", { id: "experiment-state", text: x.status }), " · version " + x.version + ", changed " + when(x.updatedAt)),
              el("p", { text: "Variants: " + x.variants.map((v, i) => i + ": " + v.offeringId + " (weight " + v.weight + ", " + share(x.variants, v) + ")").join(", ") }),
              el("p", { id: "experiment-audience", text: "Audience: " + audienceText(x.audience) })));
            if (x.status === "ended") page.append(el("p", { class: "muted", id: "experiment-ended", text: "Ended: shown to nobody, and final. Its results stay readable." }));
            else if (!me.admin) page.append(el("p", { class: "muted", id: "experiment-readonly", text: "Changing an experiment takes an admin key (this key has the console scope only)." }));
            else experimentChanges(page, x);
            experimentResults(page, body);
          }

          // Pause, resume, end; weights and audience edited: each a whole document PUT again.
          function experimentChanges(page, x) {
            const error = el("p", { class: "error", id: "experiment-error" });
            const set = (status) => putExperiment(x.id, { variants: x.variants, audience: x.audience || {}, status }, error, () => route());
            const variants = variantsForm(x.variants, [], true);
            const audience = audienceForm(x.audience);
            page.append(el("div", { class: "panel", id: "experiment-actions" }, el("h2", { text: "Status" }),
              el("p", { class: "muted", text: x.status === "running" ? "Running: customers in the audience are enrolled at their first paywall read."
                : "Paused: enrols no one more; those enrolled keep their variant." }),
              x.status === "running" ? el("button", { type: "button", id: "experiment-pause", text: "Pause", onclick: () => set("paused") })
                : el("button", { type: "button", id: "experiment-resume", text: "Resume", onclick: () => set("running") }),
              " ", el("button", { type: "button", id: "experiment-end", text: "End", onclick: () => {
                if (confirm("End the experiment " + x.id + "? Every customer goes back to targeting, and it cannot change after.")) set("ended");
              } }), error));
            const editError = el("p", { class: "error", id: "experiment-edit-error" });
            page.append(el("div", { class: "panel" }, el("h2", { text: "Change weights and audience" }),
              experimentForm("experiment-edit", variants, audience, () => x.status, () => x.id, editError, () => route(),
                variants.node, el("h3", { text: "Audience" }), audience.node, el("p", { class: "muted", text: "Customers already enrolled keep their variant: " +
                "new weights and a new audience apply to those enrolled from now on." }), el("button", { type: "submit", text: "Save" }))));
          }

          function experimentResults(page, body) {
            page.append(el("h2", { text: "Results" }), el("p", { class: "muted", text: body.status + " · computed " + when(body.computedAt) +
              (body.partial ? " · the first 100,000 customers only" : "") + " · App Store and Google Play purchases count alike (docs/offerings.md#6-read-the-result)" }));
            if (!body.enoughData) page.append(el("p", { class: "empty", id: "experiment-not-enough", text: "Not enough data yet: every variant needs " +
              body.minimumCustomers + " customers enrolled at least 7 days ago before these figures mean anything. Read nothing into the differences below." }));
            const pct = (p) => (100 * p.rate).toFixed(1) + " % (" + (100 * p.low).toFixed(1) + "–" + (100 * p.high).toFixed(1) + ")";
            const means = (list) => list.length ? list.map((m) => money(m.mean, m.currency) + " (" + money(m.low, m.currency) + "–" + money(m.high, m.currency) + ")").join(", ") : "—";
            for (const [index, days] of body.horizonDays.entries()) {
              page.append(el("div", { class: "panel" }, el("h2", { text: days + " days after enrolment" }),
                el("table", { id: "experiment-" + days }, el("tr", {}, ["Variant", "Customers", "Trials started", "Trial conversions", "Paid conversions",
                  "Revenue per customer", "Realized revenue per customer"].map((h) => el("th", { text: h }))),
                  body.variants.map((v) => { const h = v.horizons[index]; return el("tr", {}, el("td", { text: v.index + ": " + v.offeringId + " (" + v.weight + ")" }),
                    el("td", { text: h.customers + " of " + v.customers + (h.enoughData ? "" : " — not enough data") }),
                    [h.trialsStarted, h.trialConversions, h.paidConversions].map((p) => el("td", { text: p.count + " · " + pct(p) })),
                    el("td", { text: means(h.revenuePerCustomer) }), el("td", { text: means(h.realizedRevenuePerCustomer) })); }))));
            }
            page.append(el("p", { class: "note", text: body.method }));
          }

"""#
}
