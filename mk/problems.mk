# mk/problems.mk -- server/problems.c embeds docs/problems/*.md (.incbin, as
# server/openapi_blob.c embeds openapi.yaml): rebuild it when a page changes.
$(BUILD)/obj/server/problems.o: $(wildcard docs/problems/*.md)
