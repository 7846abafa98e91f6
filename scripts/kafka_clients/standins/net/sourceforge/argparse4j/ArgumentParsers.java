/*
 * Compile-time stand-in for argparse4j (not on this machine): just the calls Kafka's message
 * generator CLI makes, so its MessageGenerator class compiles. The build never runs that CLI;
 * it calls MessageGenerator.processDirectories from its own main (GenerateMessages.java).
 */
package net.sourceforge.argparse4j;

import net.sourceforge.argparse4j.inf.ArgumentParser;

public final class ArgumentParsers {
    private ArgumentParsers() {
    }

    public static ArgumentParser newArgumentParser(String prog) {
        throw new UnsupportedOperationException("argparse4j stand-in: compile-time only");
    }
}
