/* Compile-time stand-in for argparse4j's parser (see ArgumentParsers.java). */
package net.sourceforge.argparse4j.inf;

public interface ArgumentParser {
    ArgumentParser defaultHelp(boolean defaultHelp);

    ArgumentParser description(String description);

    Argument addArgument(String... nameOrFlags);

    Namespace parseArgsOrFail(String[] args);
}
