// Package browsertest loads statuspage's page in a real, headless
// Chromium, driven with chromedp, while a load runs. It is a module of its
// own so that no consumer of throttle inherits chromedp.
package browsertest
