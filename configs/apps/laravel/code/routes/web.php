<?php

use App\Http\Controllers\FormController;
use App\Http\Controllers\PageController;
use Illuminate\Support\Facades\Route;

// Controllers, not closures, so that `route:cache` can cache every route.
Route::get('/sleep', [PageController::class, 'sleep']);
Route::get('/hello', [PageController::class, 'hello']);

// A form with a session and its CSRF token (the journey `note`): only these routes start a session.
Route::middleware('session')->group(function (): void {
    Route::get('/form', [FormController::class, 'show']);
    Route::post('/form', [FormController::class, 'submit']);
});
