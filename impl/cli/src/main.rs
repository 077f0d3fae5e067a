//! obsidian-tc: the command-line entry point (serve, elicit, token mint).

fn main() {
    eprintln!("obsidian-tc: not built yet; see README.md");
    std::process::exit(1);
}
