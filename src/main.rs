mod cli;

fn main() {}
