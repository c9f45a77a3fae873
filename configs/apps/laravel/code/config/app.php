<?php
// What the application is and the framework services it loads: views, routes and the translator that
// Laravel's own error pages use; no sessions, cookies, cache or database (the article's route needs none).
return [
    'name' => 'loadcmp-laravel',
    'env' => 'production',
    'debug' => false,
    'url' => 'http://127.0.0.1',
    'timezone' => 'UTC',
    'locale' => 'en',
    'fallback_locale' => 'en',
    'providers' => [
        Illuminate\Filesystem\FilesystemServiceProvider::class,
        Illuminate\Translation\TranslationServiceProvider::class,
        Illuminate\View\ViewServiceProvider::class,
        App\Providers\RouteServiceProvider::class,
    ],
    'aliases' => [],
];
