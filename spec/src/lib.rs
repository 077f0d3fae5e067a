//! tc-spec: the clause IDs of obsidian-tc's written specification (`spec/*.md`).
