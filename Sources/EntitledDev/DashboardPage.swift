extension Dashboard {
    /// The page: HTML, CSS and JavaScript in one string, charts drawn as SVG by hand — nothing is
    /// fetched from anywhere but this server. `__DEV_KEY__` is replaced with the dev key.
    static let html = #"""
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Entitled — dev</title>
        <style>
          :root { --fg: #1d1d1f; --muted: #6e6e73; --line: #e3e3e8; --bg: #f6f6f8; --card: #fff; --accent: #0a66c2;
                  --active: #1a7f37; --gracePeriod: #d4a72c; --billingRetry: #e36209; --expired: #8c959f;
                  --revoked: #8250df; --refunded: #cf222e; --none: #c9ccd1; }
          * { box-sizing: border-box; }
          body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: var(--fg); background: var(--bg); }
          header { display: flex; flex-wrap: wrap; align-items: center; gap: 1rem 2rem; padding: .8rem 1.5rem;
                   background: var(--card); border-bottom: 1px solid var(--line); position: sticky; top: 0; z-index: 2; }
          h1 { font-size: 1.2rem; margin: 0; } h2 { font-size: 1rem; margin: 0 0 .6rem; } h3 { font-size: .9rem; margin: 1.2rem 0 .4rem; }
          .tag { font-size: .75rem; font-weight: 600; color: #fff; background: var(--accent); border-radius: 4px; padding: .05rem .35rem; vertical-align: middle; }
          .clock { font-variant-numeric: tabular-nums; } #time { font-size: 1.1rem; font-weight: 600; }
          .muted { color: var(--muted); } .small { font-size: .8rem; }
          .controls { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; margin-left: auto; }
          button, select, input { font: inherit; border: 1px solid #c9ccd1; border-radius: 6px; background: #fff; padding: .25rem .6rem; }
          button { cursor: pointer; } button:hover { border-color: var(--accent); color: var(--accent); }
          button:disabled { opacity: .45; cursor: default; color: inherit; border-color: #c9ccd1; }
          button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
          button.danger:hover { border-color: var(--refunded); color: var(--refunded); }
          .wrap { padding: 1rem 1.5rem; display: grid; gap: 1rem; }
          .cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(8.5rem, 1fr)); gap: .6rem; }
          .card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .5rem .7rem; }
          .card .n { font-size: 1.5rem; font-weight: 600; font-variant-numeric: tabular-nums; }
          .card .label { color: var(--muted); font-size: .8rem; display: flex; align-items: center; gap: .35rem; }
          .dot { width: .6rem; height: .6rem; border-radius: 50%; display: inline-block; flex: none; }
          .panel { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .8rem 1rem; min-width: 0; }
          .charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(22rem, 1fr)); gap: 1rem; }
          .chart { position: relative; } .chart svg { width: 100%; height: 190px; display: block; }
          .legend { display: flex; flex-wrap: wrap; gap: .3rem .9rem; font-size: .8rem; color: var(--muted); margin-top: .3rem; }
          .legend span { display: inline-flex; align-items: center; gap: .3rem; }
          .tip { position: absolute; pointer-events: none; background: rgba(29,29,31,.92); color: #fff; font-size: .75rem;
                 padding: .35rem .5rem; border-radius: 6px; white-space: nowrap; display: none; z-index: 1; }
          .main { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1.15fr); gap: 1rem; align-items: start; }
          @media (max-width: 1000px) { .main { grid-template-columns: 1fr; } }
          table { border-collapse: collapse; width: 100%; }
          th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
          th { font-size: .75rem; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); font-weight: 600; }
          tbody.click tr { cursor: pointer; } tbody.click tr:hover { background: #f0f4fa; } tr.selected { background: #e6effa !important; }
          .badge { display: inline-block; border-radius: 999px; padding: 0 .5rem; font-size: .78rem; font-weight: 600; color: #fff; background: var(--none); }
          .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .8rem; }
          form.add { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; margin-top: .8rem; }
          .ents { display: grid; grid-template-columns: repeat(auto-fill, minmax(15rem, 1fr)); gap: .6rem; margin: .4rem 0; }
          .ent { border: 1px solid var(--line); border-radius: 8px; padding: .5rem .7rem; }
          .ent dl { display: grid; grid-template-columns: auto 1fr; gap: .1rem .6rem; margin: .4rem 0; font-size: .82rem; }
          .ent dt { color: var(--muted); } .ent dd { margin: 0; }
          .row { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; }
          #toast { position: fixed; right: 1rem; bottom: 1rem; max-width: 28rem; display: grid; gap: .4rem; z-index: 3; }
          .toast { background: #1d1d1f; color: #fff; padding: .5rem .8rem; border-radius: 8px; font-size: .85rem; box-shadow: 0 4px 16px rgba(0,0,0,.2); }
          .toast.error { background: var(--refunded); }
          .empty { color: var(--muted); padding: .6rem 0; }
          tr.carried td { font-size: .8rem; } tr.carried td:first-child { padding-left: 1.2rem; }
          .links { display: flex; flex-wrap: wrap; gap: .3rem 1rem; flex-basis: 100%; } .links a { color: var(--accent); font-weight: 600; }
        </style></head>
        <body>
        <header>
          <h1>Entitled <span class="tag">dev</span></h1>
          <div class="clock"><div id="time">…</div><div class="muted small" id="day">virtual time</div></div>
          <div class="controls">
            <button id="pause" title="Pause or resume the automatic advance">Pause</button>
            <label class="muted small" for="speed">one day every</label>
            <select id="speed" title="Real seconds per virtual day">
              <option value="0.1">0.1 s</option><option value="0.25">0.25 s</option><option value="0.5">0.5 s</option>
              <option value="1">1 s</option><option value="2">2 s</option><option value="5">5 s</option><option value="10">10 s</option>
            </select>
            <button data-advance="P1D">+1 day</button><button data-advance="P7D">+1 week</button><button data-advance="P1M">+1 month</button>
          </div>
          <nav class="links small" id="links">
            <a href="/console" target="_blank" rel="noopener" title="The operator console: charts, customers, health; log in with the dev API key, __DEV_KEY__">Console (/console)</a>
            <span class="muted" title="Deliver the server's events to your backend: entitled dev --webhooks FILE">Webhooks: docs/operations.md#webhooks</span>
            <span class="muted" title="The Swift client for your app and backend">EntitledKit: Clients/EntitledKit/Sources/EntitledKit/EntitledKit.docc</span>
          </nav>
        </header>
        <div class="wrap">
          <section class="cards" id="cards" aria-label="Counts"></section>
          <section class="charts">
            <div class="panel"><h2>Customers by state <span class="muted small">per virtual day</span></h2>
              <div class="chart"><svg id="chart-states" role="img" aria-label="Customers by state over virtual time"></svg><div class="tip"></div></div>
              <div class="legend" id="legend-states"></div></div>
            <div class="panel"><h2>Notifications <span class="muted small">per virtual day</span></h2>
              <div class="chart"><svg id="chart-notifications" role="img" aria-label="Notifications per virtual day"></svg><div class="tip"></div></div>
              <div class="legend"><span><i class="dot" style="background: var(--accent)"></i>accepted</span><span><i class="dot" style="background: var(--refunded)"></i>failed</span></div></div>
          </section>
          <section class="main">
            <div class="panel">
              <h2>Customers <span class="muted small">— click one for its timeline</span></h2>
              <table><thead><tr><th>Customer</th><th>Status</th><th>Entitlement</th><th>Product</th><th>Expires</th><th>Renews</th></tr></thead>
                <tbody id="rows" class="click"><tr><td colspan="6" class="empty">loading…</td></tr></tbody></table>
              <form class="add" id="add">
                <input id="new-name" placeholder="new customer" required maxlength="64" pattern="[A-Za-z0-9._@\-]+" title="letters, digits, . _ @ -" size="14">
                <select id="new-product" aria-label="Product"></select>
                <label class="small"><input type="checkbox" id="new-intro"> intro offer</label>
                <button class="primary">Add &amp; buy</button>
              </form>
            </div>
            <div class="panel" id="detail">
              <div class="empty" id="detail-empty">Select a customer to see the server's answer and their timeline: each notification the simulator posted, and what the server stored.</div>
              <div id="detail-body" hidden>
                <div class="row"><h2 id="d-name" style="margin:0"></h2><span id="d-state" class="muted small"></span>
                  <span class="row" style="margin-left:auto">
                    <select id="d-product" aria-label="Product to buy"></select><button id="d-buy" class="primary">Buy</button>
                    <span class="row" id="d-play" hidden><select id="d-play-product" aria-label="Google Play product to buy"></select><input id="d-play-quantity" type="number" min="1" max="100" value="1" style="width: 3.5rem" aria-label="Units (one-time products)" title="Units of a one-time product"><button id="d-play-buy" class="primary" title="Bought on the fake Google Play, pushed to /v1/google/notifications as Pub/Sub does">Buy on Google Play</button></span>
                    <button id="d-card"></button>
                  </span></div>
                <div class="ents" id="d-ents"></div>
                <h3>Timeline <span class="muted small">— newest first: each notification the simulator posted, whether the server took it, and what it carried</span></h3>
                <table><thead><tr><th>Apple date</th><th>Entry</th><th>Product</th><th>Price</th><th>Transaction</th><th>Delivery</th></tr></thead>
                  <tbody id="d-timeline"></tbody></table>
                <button id="d-more" hidden>Older entries…</button>
              </div>
            </div>
          </section>
        </div>
        <div id="toast" aria-live="polite"></div>
        <script>
        'use strict';
        const KEY = '__DEV_KEY__';
        const STATES = [['active', 'active'], ['gracePeriod', 'grace period'], ['billingRetry', 'billing retry'], ['expired', 'expired'],
                        ['revoked', 'revoked'], ['refunded', 'refunded'], ['none', 'no entitlement']];
        const LABEL = Object.fromEntries(STATES);
        // Hex rather than CSS variables: SVG presentation attributes take plain colours everywhere.
        const COLORS = { active: '#1a7f37', gracePeriod: '#d4a72c', billingRetry: '#e36209', expired: '#8c959f', revoked: '#8250df',
                         refunded: '#cf222e', none: '#c9ccd1', accent: '#0a66c2' };
        const color = s => COLORS[s] || COLORS.none;
        const $ = id => document.getElementById(id);
        let selected = null, catalog = [], play = null, lastMetrics = null, timelineKey = '', olderCursor = null, busy = 0, known = new Set();

        function el(tag, props, ...children) {
          const node = document.createElement(tag);
          for (const [k, v] of Object.entries(props || {})) {
            if (k === 'class') node.className = v; else if (k === 'style') node.style.cssText = v;
            else if (k.startsWith('on')) node.addEventListener(k.slice(2), v); else node.setAttribute(k, v);
          }
          for (const c of children) if (c != null) node.append(c instanceof Node ? c : String(c));
          return node;
        }
        const svgEl = (tag, attrs) => { const n = document.createElementNS('http://www.w3.org/2000/svg', tag); for (const k in attrs) n.setAttribute(k, attrs[k]); return n; };
        const badge = s => el('span', { class: 'badge', style: `background:${color(s)}` }, LABEL[s] || s);
        const when = iso => iso ? iso.slice(0, 16).replace('T', ' ') : '—';
        const price = (p, c) => p == null ? '—' : `${(p / 1000).toFixed(2)} ${c || ''}`;

        function toast(text, error) {
          const t = el('div', { class: 'toast' + (error ? ' error' : '') }, text);
          $('toast').append(t); setTimeout(() => t.remove(), error ? 7000 : 4000);
        }

        async function api(path, body) {
          const init = { headers: { Authorization: `Bearer ${KEY}` } };
          if (body !== undefined) { init.method = 'POST'; init.headers['Content-Type'] = 'application/json'; init.body = JSON.stringify(body); }
          const response = await fetch(path, init);
          const data = await response.json().catch(() => ({}));
          if (!response.ok) throw Object.assign(new Error(data.detail || data.title || `HTTP ${response.status}`), { status: response.status });
          return data;
        }

        // Every control goes through here: one request at a time, the page refreshed after it.
        async function run(label, path, body) {
          busy++; document.body.style.cursor = 'progress';
          try {
            const answer = await api(path, body);
            const kinds = (answer.notifications || []).map(n => n.notificationType + (n.subtype ? '/' + n.subtype : ''));
            toast(kinds.length ? `${label}: ${kinds.length} notification${kinds.length > 1 ? 's' : ''} — ${[...new Set(kinds)].join(', ')}` : `${label}: done`);
            timelineKey = '';
            await refresh();
            return answer;
          } catch (e) { toast(`${label}: ${e.message}`, true); }
          finally { busy--; document.body.style.cursor = ''; }
        }
        const act = (label, request) => run(label, '/dev/actions', request);
        const playAct = (label, request) => run(label, '/dev/play/actions', request);

        // A Play entitlement's lifecycle, at the fake Google: what its state allows.
        function playButtons(e) {
          const b = (label, action, extra, cls) => el('button', { class: cls || '', onclick: () => playAct(label, Object.assign({ action, customer: selected, product: e.productId }, extra)) }, label);
          const out = [];
          if (e.productType === 'autoRenewable') {
            if (e.status === 'active' && e.willRenew) {
              out.push(b('Renew', 'renew'), b('Renewal fails', 'fail'), b('Pause', 'pause'), b('Cancel', 'cancel'));
              const others = play.products.filter(p => p.type === 'autoRenewable' && p.id !== e.productId);
              if (others.length) {
                const to = el('select', { 'aria-label': 'Upgrade to' }, ...others.map(p => el('option', { value: p.id }, p.id)));
                out.push(to, el('button', { onclick: () => playAct('Upgrade', { action: 'upgrade', customer: selected, product: e.productId, to: to.value }) }, 'Upgrade'));
              }
            } else if (e.status === 'gracePeriod') out.push(b('Put on hold', 'hold'), b('Recover', 'recover'), b('Cancel', 'cancel'));
            else if (e.status !== 'refunded' && e.status !== 'revoked' && e.status !== 'expired') out.push(b('Recover', 'recover'), b('Cancel', 'cancel'));
          }
          if (e.status !== 'refunded' && e.status !== 'revoked') {
            out.push(b('Refund review', 'refund_review', {}, ''));
            // A one-time purchase of several units: Google refunds some of them (refundType 2).
            if (e.productType !== 'autoRenewable') {
              const units = el('input', { type: 'number', min: '1', value: '1', style: 'width: 3.5rem', 'aria-label': 'Units to refund' });
              out.push(units, el('button', { onclick: () => playAct('Refund units', { action: 'refund_units', customer: selected, product: e.productId, quantity: Number(units.value) || 1 }) }, 'Refund units'));
            }
            out.push(b('Refund (void)', 'refund', {}, 'danger'));
          }
          return out;
        }

        // ---- Overview -------------------------------------------------------------------------
        function renderCards(m) {
          const cards = [['customers', 'customers', m.customers, null]];
          for (const [s, label] of STATES) cards.push([s, label, m.states[s] || 0, color(s)]);
          cards.push(['sent', 'notifications sent', m.notifications.sent, COLORS.accent],
                     ['accepted', 'accepted (2xx)', m.notifications.accepted, COLORS.active],
                     ['failed', 'failed', m.notifications.failed, COLORS.refunded]);
          $('cards').replaceChildren(...cards.map(([id, label, n, c]) =>
            el('div', { class: 'card', 'data-count': id }, el('div', { class: 'n' }, n),
               el('div', { class: 'label' }, c ? el('i', { class: 'dot', style: `background:${c}` }) : null, label))));
        }

        function renderClock(m) {
          $('time').textContent = when(m.serverTime) + ' UTC';
          $('day').textContent = `virtual day ${m.day} · ${m.pace.running ? `one day every ${m.pace.dayEvery} s` : 'paused'}`;
          $('pause').textContent = m.pace.running ? 'Pause' : 'Resume';
          const speed = $('speed');
          if (![...speed.options].some(o => +o.value === m.pace.dayEvery)) speed.append(el('option', { value: m.pace.dayEvery }, `${m.pace.dayEvery} s`));
          if (document.activeElement !== speed) speed.value = String(m.pace.dayEvery);
        }

        // Whole-number gridlines: a step of 1, 2 or 5 × 10^k, about four of them.
        function scale(v) {
          const raw = Math.max(1, v) / 4, p = Math.pow(10, Math.floor(Math.log10(raw)));
          const step = Math.max(1, [1, 2, 5, 10].map(x => x * p).find(x => x >= raw));
          return { step, max: step * Math.ceil(Math.max(1, v) / step) };
        }

        // A chart of stacked series over the samples: areas for customers, bars for notifications.
        function chart(svg, samples, series, kind) {
          const W = svg.clientWidth || 600, H = svg.clientHeight || 190, L = 34, R = 8, T = 8, B = 22;
          svg.setAttribute('viewBox', `0 0 ${W} ${H}`); svg.replaceChildren();
          const n = samples.length;
          if (!n) { svg.append(Object.assign(svgEl('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', fill: '#6e6e73' }), { textContent: 'waiting for the first virtual day…' })); return; }
          const totals = samples.map(s => series.reduce((a, k) => a + k.value(s), 0));
          const { step, max } = scale(Math.max(...totals));
          const slot = (W - L - R) / Math.max(1, kind === 'bars' ? n : n - 1);
          const x = i => kind === 'bars' ? L + slot * (i + .5) : (n === 1 ? L + (W - L - R) / 2 : L + slot * i);
          const y = v => T + (H - T - B) * (1 - v / max);
          for (let v = 0; v <= max; v += step) {
            const yy = y(v);
            svg.append(svgEl('line', { x1: L, x2: W - R, y1: yy, y2: yy, stroke: '#e3e3e8' }));
            svg.append(Object.assign(svgEl('text', { x: L - 5, y: yy + 4, 'text-anchor': 'end', 'font-size': 10, fill: '#6e6e73' }), { textContent: v }));
          }
          const every = Math.max(1, Math.ceil(n / 8));
          samples.forEach((s, i) => {
            // The last day always gets a label; the regular one before it gives way when too close.
            const last = i === n - 1, regular = i % every === 0 && (last || n - 1 - i >= every / 2);
            if (!regular && !last) return;
            const anchor = kind === 'bars' || n === 1 ? 'middle' : i === 0 ? 'start' : last ? 'end' : 'middle';
            svg.append(Object.assign(svgEl('text', { x: x(i), y: H - 6, 'text-anchor': anchor, 'font-size': 10, fill: '#6e6e73' }), { textContent: 'd' + s.day }));
          });
          let base = samples.map(() => 0);
          for (const k of series) {
            const top = samples.map((s, i) => base[i] + k.value(s));
            if (kind === 'bars') {
              const w = Math.max(1, Math.min(18, slot * .7));
              samples.forEach((s, i) => { const h = y(base[i]) - y(top[i]); if (h > 0) svg.append(svgEl('rect', { x: x(i) - w / 2, y: y(top[i]), width: w, height: h, fill: k.color })); });
            } else if (top.some((v, i) => v !== base[i])) {
              const upper = top.map((v, i) => `${x(i)},${y(v)}`), lower = base.map((v, i) => `${x(i)},${y(v)}`).reverse();
              svg.append(svgEl('polygon', { points: upper.concat(lower).join(' '), fill: k.color, 'fill-opacity': .75 }));
              svg.append(svgEl('polyline', { points: upper.join(' '), fill: 'none', stroke: k.color, 'stroke-width': 1.5 }));
            }
            base = top;
          }
          const cursor = svgEl('line', { y1: T, y2: H - B, stroke: '#1d1d1f', 'stroke-dasharray': '3 3', visibility: 'hidden' });
          svg.append(cursor);
          const tip = svg.parentNode.querySelector('.tip');
          svg.onmousemove = e => {
            const box = svg.getBoundingClientRect(), px = (e.clientX - box.left) * W / box.width;
            const i = Math.max(0, Math.min(n - 1, Math.round(kind === 'bars' ? (px - L) / slot - .5 : (px - L) / slot)));
            const s = samples[i];
            cursor.setAttribute('x1', x(i)); cursor.setAttribute('x2', x(i)); cursor.setAttribute('visibility', 'visible');
            tip.replaceChildren(el('div', null, `day ${s.day} · ${when(new Date(s.at).toISOString())}`),
              ...series.filter(k => k.value(s) || kind === 'bars').map(k => el('div', null, `${k.name}: ${k.value(s)}`)));
            tip.style.display = 'block';
            const left = x(i) * box.width / W;
            tip.style.left = (left > box.width / 2 ? left - tip.offsetWidth - 10 : left + 10) + 'px'; tip.style.top = '4px';
          };
          svg.onmouseleave = () => { cursor.setAttribute('visibility', 'hidden'); tip.style.display = 'none'; };
        }

        function renderCharts(m) {
          chart($('chart-states'), m.samples, STATES.map(([s, label]) => ({ name: label, color: color(s), value: p => p.states[s] || 0 })), 'areas');
          chart($('chart-notifications'), m.samples, [
            { name: 'accepted', color: COLORS.accent, value: p => p.notifications - p.failures },
            { name: 'failed', color: COLORS.refunded, value: p => p.failures }], 'bars');
          $('legend-states').replaceChildren(...STATES.map(([s, label]) => el('span', null, el('i', { class: 'dot', style: `background:${color(s)}` }), label)));
        }

        // ---- Customers ------------------------------------------------------------------------
        function renderRows(page) {
          const body = $('rows');
          known = new Set(page.customers.map(c => c.appUserId));
          if (!page.customers.length) { body.replaceChildren(el('tr', null, el('td', { colspan: 6, class: 'empty' }, 'No customers yet: add one below.'))); return; }
          const rows = [];
          for (const c of page.customers) {
            const items = c.entitlements.length ? c.entitlements : [null];
            items.forEach((e, i) => {
              const tr = el('tr', { 'data-customer': c.appUserId, class: c.appUserId === selected ? 'selected' : '', tabindex: 0,
                                    onclick: () => select(c.appUserId), onkeydown: e => { if (e.key === 'Enter') select(c.appUserId); } },
                el('td', null, i === 0 ? el('strong', null, c.appUserId) : '', i === 0 && !c.paymentSucceeds ? el('span', { class: 'muted small', title: 'payment method failing' }, ' 💳✗') : null),
                el('td', null, e ? badge(e.status) : badge('none')),
                el('td', null, e ? e.id : '—'), el('td', { class: 'mono' }, e ? e.productId : '—'),
                el('td', null, e ? when(e.expiresAt) : '—'),
                el('td', null, e && e.willRenew != null ? (e.willRenew ? 'yes' : 'no') : '—'));
              rows.push(tr);
            });
          }
          body.replaceChildren(...rows);
          const current = page.customers.find(c => c.appUserId === selected);
          if (current) renderCard(current);
        }

        function renderCard(c) {
          const card = $('d-card');
          card.textContent = c.paymentSucceeds ? 'Card fails' : 'Fix card';
          card.className = c.paymentSucceeds ? 'danger' : 'primary';
          card.onclick = () => act(c.paymentSucceeds ? 'Card fails' : 'Card fixed', { action: 'paymentMethod', customer: c.appUserId, paymentMethod: c.paymentSucceeds ? 'failing' : 'ok' });
        }

        function select(id) {
          selected = id; timelineKey = ''; olderCursor = null;
          for (const tr of $('rows').children) tr.classList.toggle('selected', tr.dataset.customer === id);
          $('detail-empty').hidden = true; $('detail-body').hidden = false;
          $('d-name').textContent = id; $('d-ents').replaceChildren(); $('d-timeline').replaceChildren();
          history.replaceState(null, '', '#' + encodeURIComponent(id));
          refresh();
        }

        function renderAnswer(c) {
          $('d-state').textContent = `customer ${c.state} · appAccountToken ${c.appAccountToken}` + (c.aliases && c.aliases.length ? ` · aliases ${c.aliases.join(', ')}` : '');
          const ents = Object.entries(c.entitlements);
          if (!ents.length) { $('d-ents').replaceChildren(el('div', { class: 'empty' }, 'No entitlement: the server answers "new" until a purchase arrives.')); return; }
          $('d-ents').replaceChildren(...ents.map(([id, e]) => {
            const facts = [['store', e.store === 'playStore' ? 'Google Play' : null], ['source', e.source === 'grant' ? 'promotional grant' : null], ['grant', e.grantId], ['product', e.productId || null], ['expires', when(e.expiresAt)], ['grace until', e.gracePeriodExpiresAt && when(e.gracePeriodExpiresAt)],
              ['will renew', e.willRenew == null ? null : (e.willRenew ? 'yes' : 'no') + (e.renewsTo && e.renewsTo !== e.productId ? ` → ${e.renewsTo}` : '')],
              ['period', e.periodType], ['billing issue', e.billingIssueDetectedAt && when(e.billingIssueDetectedAt)],
              ['ownership', e.ownership], ['transaction', e.transactionId]].filter(([, v]) => v != null && v !== '—');
            const buttons = [];
            if (e.store === 'playStore' && play) buttons.push(...playButtons(e));
            else if (e.productType === 'autoRenewable' && (e.status === 'active' || e.status === 'gracePeriod' || e.status === 'billingRetry')) {
              buttons.push(e.willRenew
                ? el('button', { onclick: () => act('Cancel auto-renew', { action: 'autoRenew', customer: selected, product: e.productId, enabled: false }) }, 'Cancel auto-renew')
                : el('button', { onclick: () => act('Turn auto-renew on', { action: 'autoRenew', customer: selected, product: e.productId, enabled: true }) }, 'Turn auto-renew on'));
            }
            if (e.store !== 'playStore' && e.source !== 'grant' && e.status !== 'refunded' && e.status !== 'revoked') buttons.push(el('button', { class: 'danger', onclick: () => act('Refund', { action: 'refund', customer: selected, product: e.productId }) }, 'Refund'));
            return el('div', { class: 'ent' }, el('div', { class: 'row' }, el('strong', null, id), badge(e.status), e.active ? el('span', { class: 'small muted' }, 'grants access') : el('span', { class: 'small muted' }, 'no access')),
              el('dl', null, ...facts.flatMap(([k, v]) => [el('dt', null, k), el('dd', { class: k === 'transaction' || k === 'product' || k === 'grant' ? 'mono' : '' }, v)])),
              el('div', { class: 'row' }, ...buttons));
          }));
        }

        function itemCells(item, carried) {
          const what = item.type ? `${item.type}${item.subtype ? ' / ' + item.subtype : ''}` : '';
          return [el('td', null, when(item.occurredAt)),
            el('td', null, el('span', { class: 'small muted' }, (carried ? '↳ ' : '') + item.kind), what ? el('div', null, what) : null),
            el('td', { class: 'mono' }, item.productId || '—'), el('td', null, price(item.price, item.currency)),
            el('td', { class: 'mono' }, item.transactionId || '—')];
        }

        function deliveryCell(d) {
          if (!d) return el('td', { class: 'muted' }, '—');
          return el('td', null, d.delivered ? el('span', { style: 'color: var(--active)' }, `✓ ${d.lastStatus || ''}`)
            : el('span', { style: 'color: var(--refunded)' }, `✗ ${d.lastStatus || d.lastError || 'not delivered'}`), d.attempts > 1 ? ` (${d.attempts} attempts)` : '');
        }

        // One notification a row (with its delivery), what it carried in muted rows under it.
        function timelineRows(entry) {
          const d = entry.delivery;
          const head = entry.item
            ? el('tr', d ? { 'data-notification': d.notificationUUID } : null, ...itemCells(entry.item, false), deliveryCell(d))
            : el('tr', { 'data-notification': d.notificationUUID }, el('td', null, when(d.signedDate)),
                el('td', null, el('span', { class: 'small muted' }, 'notification, not stored'), el('div', null, d.notificationType + (d.subtype ? ' / ' + d.subtype : ''))),
                el('td', null, '—'), el('td', null, '—'), el('td', null, '—'), deliveryCell(d));
          return [head, ...entry.carried.map(item => el('tr', { class: 'carried muted' }, ...itemCells(item, true), el('td', null, '')))];
        }

        async function loadTimeline(force) {
          if (!selected) return;
          const key = `${selected}|${lastMetrics ? lastMetrics.now + '|' + lastMetrics.notifications.sent : ''}`;
          if (!force && key === timelineKey) return;
          const id = selected;
          let t;
          try { t = await api(`/dev/customers/${encodeURIComponent(id)}/timeline?limit=50`); }
          catch (e) {
            if (e.status !== 404 || id !== selected) throw e;
            toast(`${id}: no such customer`, true); selected = null; history.replaceState(null, '', location.pathname);
            $('detail-empty').hidden = false; $('detail-body').hidden = true;
            return;
          }
          if (id !== selected) return;
          timelineKey = key; olderCursor = t.nextCursor;
          renderAnswer(t.customer);
          $('d-timeline').replaceChildren(...(t.entries.length ? t.entries.flatMap(timelineRows)
            : [el('tr', null, el('td', { colspan: 6, class: 'empty' }, 'Nothing yet: buy a product above, and the simulator posts its notification here.'))]));
          $('d-more').hidden = !olderCursor;
        }

        $('d-more').onclick = async () => {
          if (!olderCursor || !selected) return;
          try {
            const t = await api(`/dev/customers/${encodeURIComponent(selected)}/timeline?limit=50&cursor=${encodeURIComponent(olderCursor)}`);
            $('d-timeline').append(...t.entries.flatMap(timelineRows)); olderCursor = t.nextCursor; $('d-more').hidden = !olderCursor;
          } catch (e) { toast(e.message, true); }
        };

        // ---- Controls -------------------------------------------------------------------------
        $('pause').onclick = () => run(lastMetrics && lastMetrics.pace.running ? 'Paused' : 'Resumed', '/dev/clock', { running: !(lastMetrics && lastMetrics.pace.running) });
        $('speed').onchange = e => run('Speed', '/dev/clock', { dayEvery: +e.target.value });
        for (const b of document.querySelectorAll('[data-advance]')) b.onclick = () => run(b.textContent, '/dev/clock/advance', { by: b.dataset.advance });
        $('d-buy').onclick = () => selected && act('Buy', { action: 'purchase', customer: selected, product: $('d-product').value });
        $('d-play-buy').onclick = () => selected && playAct('Buy on Google Play', { action: 'buy', customer: selected, product: $('d-play-product').value, quantity: Number($('d-play-quantity').value) || 1 });
        $('add').onsubmit = async e => {
          e.preventDefault();
          const name = $('new-name').value.trim(), product = $('new-product').value;
          if (!name) return;
          // A Google Play purchase makes the customer at the server; the App Store simulator needs none.
          if (product.startsWith('play:')) {
            await playAct('Buy on Google Play', { action: 'buy', customer: name, product: product.slice(5) });
            $('new-name').value = ''; select(name); return;
          }
          // Adding an existing simulator customer again would reset their payment method: only buy.
          if (!known.has(name) && !(await run('Add customer', '/dev/actions', { action: 'customer', customer: name }))) return;
          const intro = $('new-intro').checked && (catalog.find(p => p.id === product) || {}).hasIntroductoryOffer;
          if (product) await act('Buy', { action: 'purchase', customer: name, product, offer: intro ? 'intro' : undefined });
          $('new-name').value = ''; select(name);
        };

        async function loadCatalog() {
          catalog = await api('/dev/catalog');
          const options = () => catalog.filter(p => p.kind !== 'consumable').map(p =>
            el('option', { value: p.id }, `${p.id} — ${price(p.price, p.currency)}${p.period ? ' / ' + p.period : ''}`));
          $('d-product').replaceChildren(...options());
          try { play = await api('/dev/play'); } catch (e) { play = null; }
          const playOptions = () => play ? play.products.filter(p => p.type !== 'consumable').map(p => el('option', { value: 'play:' + p.id }, `${p.id} — Google Play`)) : [];
          $('d-play').hidden = !play;
          if (play) $('d-play-product').replaceChildren(...playOptions().map(o => { o.value = o.value.slice(5); return o; }));
          $('new-product').replaceChildren(el('option', { value: '' }, 'no purchase'), ...options(), ...playOptions());
          $('new-product').value = catalog.length ? catalog[0].id : '';
        }

        // ---- Polling --------------------------------------------------------------------------
        let refreshing = null;
        async function refresh() {
          if (refreshing) return refreshing;
          refreshing = (async () => {
            try {
              const [m, page] = await Promise.all([api('/dev/metrics'), api('/dev/customers')]);
              lastMetrics = m;
              renderClock(m); renderCards(m); renderCharts(m); renderRows(page);
              await loadTimeline(false);
            } catch (e) { $('day').textContent = `cannot reach the server: ${e.message}`; }
            finally { refreshing = null; }
          })();
          return refreshing;
        }
        window.addEventListener('resize', () => lastMetrics && renderCharts(lastMetrics));
        (async () => {
          try { await loadCatalog(); } catch (e) { toast(`catalog: ${e.message}`, true); }
          const hash = decodeURIComponent(location.hash.slice(1));
          if (hash) select(hash); else await refresh();
          setInterval(() => { if (!document.hidden && !busy) refresh(); }, 1000);
        })();
        </script>
        </body></html>
        """#
}
