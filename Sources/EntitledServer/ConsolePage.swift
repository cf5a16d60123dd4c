/// The console's HTML and style sheet (served by ``ConsoleAssets``). No inline script or style:
/// the Content-Security-Policy allows only `/console/console.js` and `/console/console.css`.
enum ConsolePage {
    static let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Entitled console</title>
        <link rel="icon" href="data:,">
        <link rel="stylesheet" href="/console/console.css">
        <script src="/console/console.js" defer></script>
        </head>
        <body>
        <header>
          <strong>Entitled</strong>
          <nav id="nav" hidden>
            <a href="#overview">Overview</a>
            <a href="#charts">Charts</a>
            <a href="#customers">Customers</a>
            <a href="#offerings">Offerings</a>
            <a href="#health">Health</a>
            <a href="#retention">Retention</a>
            <a href="#experiments">Experiments</a>
            <button id="logout" type="button">Log out</button>
          </nav>
        </header>
        <main>
          <section id="login" hidden>
            <h1>Log in</h1>
            <p>An API key with the <code>console</code> (read-only) or <code>admin</code> scope. It stays in this
            tab's session storage and is sent only to this server.</p>
            <form id="login-form">
              <input id="login-key" type="password" autocomplete="off" placeholder="API key" required>
              <button type="submit">Log in</button>
            </form>
            <p id="login-error" class="error"></p>
          </section>
          <section id="page"></section>
        </main>
        <div id="tip" hidden></div>
        </body>
        </html>
        """

    static let css = """
        :root { --fg: #1d2433; --muted: #667085; --line: #d0d5dd; --bg: #f8f9fb; --card: #fff;
                --c1: #2563eb; --c2: #16a34a; --c3: #dc2626; --c4: #d97706; --c5: #7c3aed; --c6: #0891b2; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
        header { display: flex; gap: 1.5em; align-items: center; padding: .6em 1em; background: var(--card);
                 border-bottom: 1px solid var(--line); flex-wrap: wrap; }
        nav { display: flex; gap: 1em; align-items: center; flex-wrap: wrap; }
        nav a { color: var(--fg); text-decoration: none; } nav a.on { font-weight: 600; color: var(--c1); }
        main { padding: 1em; max-width: 1200px; margin: 0 auto; }
        h1 { font-size: 1.3em; margin: .2em 0 .6em; } h2 { font-size: 1.05em; margin: 0 0 .4em; }
        .controls { display: flex; gap: .6em; flex-wrap: wrap; margin-bottom: 1em; align-items: center; }
        .cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(160px, 1fr)); gap: .6em; margin-bottom: 1em; }
        .card, .chart, .panel { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .7em .9em; }
        .card .v { font-size: 1.5em; font-weight: 600; } .card .l { font-size: .85em; font-weight: 600; }
        .card .w { color: var(--muted); font-size: .75em; } .card .more { font-size: .75em; }
        #chart-families a { color: var(--fg); text-decoration: none; } #chart-families a.on { font-weight: 600; color: var(--c1); }
        .chart .csv, .panel .csv { font-size: .75em; padding: .1em .5em; margin-left: .5em; }
        table.heat td { text-align: right; white-space: nowrap; } table.heat td:first-child { text-align: left; }
        .empty { background: #fffbeb; border: 1px solid #fde68a; border-radius: 6px; padding: .5em .7em; color: #713f12; }
        .charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); gap: .8em; }
        .chart svg { width: 100%; height: auto; display: block; }
        .chart .how, .note { color: var(--muted); font-size: .8em; margin: .3em 0 0; }
        .legend { display: flex; gap: .8em; flex-wrap: wrap; font-size: .8em; margin-bottom: .2em; }
        .legend i { display: inline-block; width: .8em; height: .8em; border-radius: 2px; margin-right: .3em; vertical-align: -1px; }
        .axis { font-size: 10px; fill: var(--muted); } .grid { stroke: #eef0f3; }
        table { width: 100%; border-collapse: collapse; background: var(--card); }
        th, td { text-align: left; padding: .35em .5em; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { font-weight: 600; font-size: .85em; color: var(--muted); }
        .panel { margin-bottom: 1em; overflow-x: auto; }
        pre { background: #f2f4f7; padding: .5em; overflow-x: auto; font-size: .8em; max-width: 100%; }
        .error { color: var(--c3); } .muted { color: var(--muted); } .ok { color: var(--c2); }
        #tip { position: fixed; pointer-events: none; background: #101828; color: #fff; font-size: 12px; padding: .4em .6em;
               border-radius: 6px; z-index: 10; white-space: pre; }
        button, select, input { font: inherit; padding: .3em .6em; }
        a { color: var(--c1); }
        """
}
