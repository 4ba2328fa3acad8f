# mk/web.mk -- server/page.c embeds the page's static files, web/index.html,
# web/app.js and web/app.css (.incbin, as server/problems.c embeds
# docs/problems/*.md): rebuild it when one changes. No build step: the files
# are served as they are.
$(BUILD)/obj/server/page.o: $(wildcard web/*)
