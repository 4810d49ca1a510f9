// Package web embeds the browser app built from web/src into web/dist by esbuild
// (`make web`). dist/ holds only a placeholder in git; a binary built before
// `make web` serves a page that says how to build the app.
package web

import "embed"

// Dist is the built browser app: index.html, app.js, app.css.
//
//go:embed all:dist
var Dist embed.FS
