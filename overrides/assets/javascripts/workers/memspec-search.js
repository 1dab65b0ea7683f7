// memspec's site search worker: Material for MkDocs' own search worker, loaded unchanged,
// with lunr's query lexer splitting a query at white space only.
//
// lunr's QueryLexer.termSeparator is fixed when lunr loads, to its default [\s\-]+, and
// Material sets only lunr.tokenizer.separator (the index's separator, from mkdocs.yml). So
// the index keeps REC-5 as one token while the lexer split the query "REC-5" into "REC" and
// "5". The lexer tests one character at a time, so it cannot honour the separator's
// look-aheads; white space is the one separator it needs, as Material splits every term of
// the query at the configured separator afterwards (the same regular expression as the index).
"use strict";

(function () {
  var theme = new URL(new URL(self.location.href).searchParams.get("worker") || "",
                      self.location.href);
  if (theme.origin !== self.location.origin) {
    throw new Error("memspec-search: the search worker must come from this site");
  }
  importScripts(theme.href);
  self.lunr.QueryLexer.termSeparator = /\s+/;
})();
