// Opens XProf's trace viewer for one host of one run, zooms into the steps around the
// middle of the profile, turns every flow category on (launch -> kernel arrows), and
// saves a PNG. Run by docs/screenshot.sh, which serves the logdir on loopback.
//
//   node shot.mjs URL OUT.png [ZOOMS] [FIND]
//
// With FIND, the view is framed on the first event of that name instead (the trace
// viewer's search, then 'f'), and ZOOMS more 'w' presses zoom into its start.
import { chromium } from 'playwright-core';

const [url, out, zooms = '13', find = ''] = process.argv.slice(2);
const width = 1800, height = 1000;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  // No network beyond loopback: keep Chromium from reaching out; SwiftShader draws
  // the trace viewer's canvas without a GPU.
  args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'],
});
try {
  const page = await browser.newPage({ viewport: { width, height } });
  await page.goto(url, { waitUntil: 'networkidle', timeout: 60000 });
  // The trace viewer is an iframe the page adds once it has settled; it then streams
  // its data.
  let frame;
  for (let i = 0; i < 60 && !frame; i++) {
    await page.waitForTimeout(500);
    frame = page.frames().find((f) => f.url().includes('trace_viewer_index'));
  }
  if (!frame) throw new Error(`no trace viewer at ${url}`);
  await page.waitForTimeout(8000);
  // 'w' zooms in around the pointer: a few steps near the end of the run, where the
  // steps are steady (the first one holds cuBLAS's set-up); or, with FIND, at the start
  // of the event found.
  let x = Math.round(width * 0.89);
  if (find) {
    const box = frame.getByPlaceholder('Find Events...');
    await box.click();
    await box.fill(find);
    await box.press('Enter');
    await page.waitForTimeout(1500);
    // The first match selected ("1 of N").
    await frame.getByText('→', { exact: true }).first().click();
    await page.waitForTimeout(1000);
    // Out of the search box, so that 'f' frames the selection rather than being typed.
    await box.blur();
    await page.mouse.move(Math.round(width * 0.6), 400);
    await page.keyboard.press('f');
    await page.waitForTimeout(1500);
    x = Math.round(width * 0.35);
  }
  await page.mouse.click(x, 700);
  for (let i = 0; i < Number(zooms); i++) {
    await page.mouse.move(x, 400);
    await page.keyboard.press('w');
    await page.waitForTimeout(150);
  }
  await page.waitForTimeout(2000);
  // "Flow events" -> "All": the launch -> kernel arrows.
  await frame.getByText('Flow events', { exact: true }).click();
  await frame.getByRole('button', { name: 'All', exact: true }).and(frame.locator(':visible')).first().click();
  await page.keyboard.press('Escape');
  await page.waitForTimeout(2000);
  await page.screenshot({ path: out, clip: { x: 0, y: 0, width, height: 560 } });
  console.log(`screenshot: ${out}`);
} finally {
  await browser.close();
}
